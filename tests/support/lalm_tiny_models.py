"""Tiny randomly initialised LALM checkpoints, built offline from configs, for tests and device checks.

Each builder writes a local checkpoint folder the way a real one looks to transformers: a model
saved with ``save_pretrained``, its processor (a byte-level Qwen2 BPE tokenizer with the special
tokens the processor needs, a Whisper feature extractor with a 5 s window, and a stand-in chat
template in the Qwen layout), and for Qwen2.5-Omni the speaker table file. The weights are
random: the models answer garbage, which is what the tests need. Nothing is downloaded.
"""

from __future__ import annotations

from pathlib import Path


def _byte_tokenizer(specials: dict[str, str]):
    """A Qwen2 BPE tokenizer over the 256 byte-level symbols plus the special tokens the
    processors need (no merges: one token per byte)."""
    from tokenizers import AddedToken, pre_tokenizers
    from transformers import Qwen2Tokenizer

    names = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", *specials.values()]
    vocab = {s: i for i, s in enumerate(names)}
    for symbol in sorted(pre_tokenizers.ByteLevel.alphabet()):
        vocab[symbol] = len(vocab)
    tok = Qwen2Tokenizer(
        vocab=vocab,
        merges=[],
        unk_token=None,
        bos_token=None,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        extra_special_tokens=specials,
    )
    tok.add_tokens([AddedToken("<|im_start|>", special=True)])
    return tok


#: Stand-in for a checkpoint's chat template, in the Qwen layout (<|im_start|>role ... <|im_end|>,
#: each audio part as <|audio_bos|><|AUDIO|><|audio_eos|>); the real template ships with the weights.
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{% if m.content is string %}{{ m.content }}"
    "{% else %}{% for c in m.content %}{% if c.type == 'audio' %}<|audio_bos|><|AUDIO|><|audio_eos|>"
    "{% else %}{{ c.text }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
TEXT = {
    "hidden_size": 32,
    "intermediate_size": 37,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 4096,
}
AUDIO = {"d_model": 32, "encoder_attention_heads": 4, "encoder_ffn_dim": 32, "encoder_layers": 1, "num_mel_bins": 20}


def _extractor():
    from transformers import WhisperFeatureExtractor

    return WhisperFeatureExtractor(feature_size=20, chunk_length=5)  # 5 s window keeps the test fast


def build_tiny_qwen25_omni(folder: Path) -> None:
    """A full Qwen2.5-Omni checkpoint folder without the talker (random weights)."""
    import torch
    from transformers import (
        Qwen2_5OmniConfig,
        Qwen2_5OmniForConditionalGeneration,
        Qwen2_5OmniProcessor,
        Qwen2_5OmniThinkerConfig,
        Qwen2VLImageProcessor,
        Qwen2VLVideoProcessor,
    )

    specials = {
        "audio_token": "<|AUDIO|>",
        "audio_bos_token": "<|audio_bos|>",
        "audio_eos_token": "<|audio_eos|>",
        "image_token": "<|IMAGE|>",
        "video_token": "<|VIDEO|>",
        "vision_bos_token": "<|vision_bos|>",
        "vision_eos_token": "<|vision_eos|>",
    }
    tok = _byte_tokenizer(specials)
    ids = {k: tok.convert_tokens_to_ids(v) for k, v in specials.items()}
    thinker = Qwen2_5OmniThinkerConfig(
        audio_config={**AUDIO, "max_source_positions": 1500, "n_window": 100, "output_dim": 32},
        vision_config={
            "depth": 1,
            "hidden_size": 32,
            "intermediate_size": 32,
            "num_heads": 4,
            "out_hidden_size": 32,
            "spatial_merge_size": 1,
            "fullatt_block_indexes": [0],
        },
        text_config={
            **TEXT,
            "vocab_size": len(tok),
            "eos_token_id": tok.eos_token_id,
            "pad_token_id": 0,
            "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [1, 1, 2]},
        },
        audio_token_index=ids["audio_token"],
        image_token_index=ids["image_token"],
        video_token_index=ids["video_token"],
        audio_start_token_id=ids["audio_bos_token"],
        audio_end_token_id=ids["audio_eos_token"],
        vision_start_token_id=ids["vision_bos_token"],
        user_token_id=tok.convert_tokens_to_ids("<|im_start|>"),
    )
    torch.manual_seed(0)
    model = Qwen2_5OmniForConditionalGeneration(
        Qwen2_5OmniConfig(thinker_config=thinker.to_dict(), enable_audio_output=False)
    )
    model.save_pretrained(folder)
    Qwen2_5OmniProcessor(
        image_processor=Qwen2VLImageProcessor(),
        video_processor=Qwen2VLVideoProcessor(),
        feature_extractor=_extractor(),
        tokenizer=tok,
        chat_template=CHAT_TEMPLATE,
    ).save_pretrained(folder)
    torch.save({}, Path(folder) / "spk_dict.pt")  # the speaker table a real checkpoint ships (for speech output only)


def build_tiny_qwen2_audio(folder: Path) -> None:
    import torch
    from transformers import Qwen2AudioConfig, Qwen2AudioForConditionalGeneration, Qwen2AudioProcessor

    specials = {"audio_token": "<|AUDIO|>", "audio_bos_token": "<|audio_bos|>", "audio_eos_token": "<|audio_eos|>"}
    tok = _byte_tokenizer(specials)
    config = Qwen2AudioConfig(
        audio_config={**AUDIO, "max_source_positions": 250},  # the encoder's fixed input: 5 s of frames
        text_config={
            "model_type": "qwen2",
            **TEXT,
            "vocab_size": len(tok),
            "eos_token_id": tok.eos_token_id,
            "pad_token_id": 0,
        },
        audio_token_index=tok.convert_tokens_to_ids("<|AUDIO|>"),
    )
    torch.manual_seed(0)
    Qwen2AudioForConditionalGeneration(config).save_pretrained(folder)
    Qwen2AudioProcessor(feature_extractor=_extractor(), tokenizer=tok, chat_template=CHAT_TEMPLATE).save_pretrained(
        folder
    )


TINY_BUILDERS = {"qwen2_5_omni": build_tiny_qwen25_omni, "qwen2_audio": build_tiny_qwen2_audio}
