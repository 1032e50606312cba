"""Chat text -> text a TTS voice can read aloud.

Typed chat is not speech: it has URLs, emoticons and emoji, html, chat abbreviations
("lol", "idk"), letter stretching ("sooo"), shouting in capitals and runs of punctuation.
``normalize_chat`` rewrites a message into plain spoken English; ``is_speakable`` says whether
anything sayable is left.

>>> normalize_chat("HIIIII!!!! how r u?? lol :)")
'Hi! How are you? Haha.'
>>> normalize_chat("see https://byu.edu/x?y=1 &amp; tell me... idk")
"See this link and tell me… I don't know."
>>> normalize_chat("*their")  # a typo correction, not something anyone says
''
>>> is_speakable(normalize_chat(":-) <3 !!!"))
False
"""

from __future__ import annotations

import html
import re
import unicodedata

#: Chat abbreviations and apostrophe-less contractions, as a speaker would say them.
CHAT_WORDS = {
    "lol": "haha",
    "lmao": "haha",
    "lmfao": "haha",
    "rofl": "haha",
    "lolz": "haha",
    "hehe": "haha",
    "idk": "I don't know",
    "idc": "I don't care",
    "tbh": "to be honest",
    "btw": "by the way",
    "omg": "oh my gosh",
    "omw": "on my way",
    "brb": "be right back",
    "jk": "just kidding",
    "imo": "in my opinion",
    "imho": "in my opinion",
    "ikr": "I know, right",
    "nvm": "never mind",
    "ttyl": "talk to you later",
    "smh": "oh man",
    "irl": "in real life",
    "fyi": "just so you know",
    "wtf": "what the heck",
    "ty": "thank you",
    "thx": "thanks",
    "pls": "please",
    "plz": "please",
    "u": "you",
    "ur": "your",
    "r": "are",
    "ya'll": "y'all",
    "cuz": "because",
    "bc": "because",
    "tho": "though",
    "rn": "right now",
    "ppl": "people",
    "bf": "boyfriend",
    "gf": "girlfriend",
    "k": "okay",
    "ok": "okay",
    "kk": "okay",
    "w/": "with",
    "b4": "before",
    "gr8": "great",
    "im": "I'm",
    "ive": "I've",
    "youre": "you're",
    "theyre": "they're",
    "thats": "that's",
    "whats": "what's",
    "dont": "don't",
    "doesnt": "doesn't",
    "didnt": "didn't",
    "isnt": "isn't",
    "wasnt": "wasn't",
    "arent": "aren't",
    "werent": "weren't",
    "havent": "haven't",
    "hasnt": "hasn't",
    "couldnt": "couldn't",
    "wouldnt": "wouldn't",
    "shouldnt": "shouldn't",
    "cant": "can't",
    "wont": "won't",
    "theres": "there's",
    "hows": "how's",
    "wheres": "where's",
    "youve": "you've",
    "soo": "so",
    "noo": "no",
    "heey": "hey",
    "hrs": "hours",
    "hr": "hour",
    "mins": "minutes",
}

#: Short words in capitals that are shouted words, not acronyms to spell out.
_SHOUTED_SHORT_WORDS = {
    "THE",
    "AND",
    "YOU",
    "YES",
    "NOT",
    "WAS",
    "ARE",
    "BUT",
    "FOR",
    "HI",
    "NO",
    "SO",
    "OH",
    "MY",
    "ME",
    "WE",
    "IT",
    "IS",
    "HE",
    "SHE",
    "WOW",
    "YAY",
    "OK",
    "TOO",
    "ALL",
    "HOW",
    "WHY",
    "WHO",
    "CAN",
    "DID",
    "HAD",
    "HAS",
    "HER",
    "HIM",
    "HIS",
    "ITS",
    "NOW",
    "OUT",
    "SEE",
    "BAD",
    "BIG",
    "GO",
    "DO",
    "AM",
    "BE",
    "OF",
    "TO",
    "IN",
    "ON",
    "AT",
    "UP",
    "OR",
    "IF",
    "AN",
    "AS",
    "BY",
    "US",
    "LOL",
}

_URL = r"(?i:\b(?:https?://|www\.)\S+)|\b[a-z0-9-]+\.(?:com|org|net|edu|gov|io|tv)(?:/\S*)?\b"
_EMAIL = r"\b[\w.+-]+@[\w-]+\.[\w.]+\b"
_TAG = r"</?[A-Za-z_][\w-]*>"
_EMOTICON = r"(?<!\w)(?:[:;=xX][-'^o]?[()\[\]DPpOo/\\|*3$@]+|[()\[\]D/\\|][-']?[:;=]|<3+|</3|\^_*\^|-_+-|[oO0T>]_+[oO0T<]|:'\(|xD+)(?!\w)"
_CORRECTION = re.compile(r"^\s*(?:\*\s*\S+|\S+\s*\*)\s*$")  # "*their", "there*": a fix of an earlier typo
_LAUGH = r"(?i)\b(?:a?(?:ha){2,}h?|(?:he){2,}h?|(?:hi){3,}h?|(?:ah){2,})\b"
_STRETCH = r"([A-Za-z])\1{2,}"
_WORD = r"[A-Za-z][A-Za-z'/]*|\d+(?:[.,]\d+)*"


def _strip_symbols(text: str) -> str:
    """Drop emoji and other symbols; fold accents and typographic quotes to plain letters."""
    if text.isascii():
        return text
    text = text.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"').replace("\u201d", '"')
    text = text.replace("\u2026", "...").replace("\u2014", ", ").replace("\u2013", ", ")
    out = []
    for ch in unicodedata.normalize("NFKD", text):
        cat = unicodedata.category(ch)
        if cat == "Mn":  # combining accent
            continue
        keep = cat[0] in "LNP" and ord(ch) < 0x2000
        out.append(ch if keep else " ")  # emoji, pictographs, dingbats, variation selectors, spaces
    return "".join(out)


def _destretch(match: re.Match) -> str:
    """'hiiii' -> 'hi', 'yaaay' -> 'yay', 'happpy' -> 'happy', 'coooool' -> 'cool'."""
    ch = match.group(1)
    return ch if ch.lower() in "aiuy" else ch * 2


def _word(match: re.Match) -> str:
    token = match.group(0)
    lower = token.lower()
    if lower in CHAT_WORDS:
        return CHAT_WORDS[lower]
    if lower == "i" or lower.startswith("i'"):
        return "I" + lower[1:]
    if token[1:].isupper() and (len(token) >= 4 or token.upper() in _SHOUTED_SHORT_WORDS):
        return lower  # shouting, not an acronym to spell out ("BYU", "AI" stay)
    return token


def _compile(rules):
    return [(re.compile(pattern), repl) for pattern, repl in rules]


#: Before symbols are stripped: things written with symbols.
_MARKUP_RULES = _compile(
    [
        (_URL, " this link "),
        (_EMAIL, " this email "),
        (_TAG, " "),
        (_EMOTICON, " . "),  # an emoticon closes a thought
        (r"\$(\d+)(?:\.(\d\d))?\b", lambda m: f"{m.group(1)} dollars {m.group(2) or ''}"),
        (r"&", " and "),
        (r"@", " at "),
        (r"\+", " plus "),
        (r"%", " percent"),
    ]
)
#: After: words, stretching, laughter, punctuation runs, spacing.
_SPEECH_RULES = _compile(
    [
        (r"(\d)\.(\d)", r"\1 point \2"),
        (r"[<>*_~^|#\[\]{}\\`\s]+", " "),
        (r"(?<=\w)/(?=\w)", " or "),
        (_STRETCH, _destretch),
        (_LAUGH, "haha"),
        (r"(?i)\bhaha(?:[\s,.!]+haha)+\b", "haha"),
        (r"\s*([?!][?!.]*[?!]|[?!])", lambda m: "?" if "?" in m.group(1) else "!"),  # "?!?!" -> "?"
        (r"\.{2,}", "\u2026"),
        (r"([,;:.!?\u2026])(?:\s*[,;:.])+", r"\1"),  # ",," -> ",", "!." -> "!"
        (_WORD, _word),
        (r"\s+([,.!?;:\u2026])", r"\1"),
        (r"([,.!?;:\u2026])(?=[A-Za-z])", r"\1 "),
        (r"(^|[\s(])['\"]+|['\"]+(?=$|[\s),.!?])", r"\1"),  # stray quotes
        (r"[\"()]", ""),
        (r"\s+", " "),
    ]
)
_SENTENCE_START = re.compile(r"(^|[.!?\u2026] )([a-z])")


def normalize_chat(text: str) -> str:
    """Rewrite one chat message as the words a speaker would say; ``""`` if nothing is sayable."""
    if _CORRECTION.match(text):
        return ""
    text = html.unescape(text)
    for pattern, repl in _MARKUP_RULES:
        text = pattern.sub(repl, text)
    text = _strip_symbols(text)
    for pattern, repl in _SPEECH_RULES:
        text = pattern.sub(repl, text)
    text = text.strip(" ,;:-'")
    if not is_speakable(text):
        return ""
    text = _SENTENCE_START.sub(lambda m: m.group(1) + m.group(2).upper(), text)
    return text if text[-1] in ".!?\u2026" else text + "."


def is_speakable(text: str) -> bool:
    """True when the text has at least one letter or digit to say."""
    return any(c.isalnum() for c in text)
