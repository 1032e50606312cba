"""The SpeakerSleuth leaderboard Space (Gradio): leaderboard, submission, viewer, results store.

Nothing outside this package imports it; it depends on ``metrics`` and ``speakersleuth_dataset``.
"""
