"""The widget of a SpeakerSleuth metric Space, copied into each metric tree as ``widget.py``.

``evaluate.utils.launch_gradio_widget`` (what evaluate's own metric Spaces run) builds its
interface with ``gr.inputs`` / ``gr.outputs``, which Gradio removed in 4.0, so it fails on the
Gradio a Space pins today. This is the same widget on today's Gradio, with evaluate's own helpers
for the input types, the table's parsing and the card: a table with one column per input feature
(a list as JSON text), the scores as JSON.
"""

from __future__ import annotations

from pathlib import Path

import gradio as gr
from evaluate.utils.gradio import infer_gradio_input_types, json_to_string_type, parse_gradio_data, parse_readme


def widget(metric, readme: Path) -> gr.Interface:
    """The metric's Gradio interface (not launched); its ``compute`` endpoint takes the table."""
    features = metric.features[0] if isinstance(metric.features, list) else metric.features
    names, types = zip(*features.items())
    input_types = infer_gradio_input_types(types)

    def compute(table):
        return metric.compute(**parse_gradio_data(table, input_types))

    return gr.Interface(
        fn=compute,
        inputs=gr.Dataframe(
            headers=list(names), column_count=len(names), row_count=1, datatype=json_to_string_type(input_types)
        ),
        outputs=gr.JSON(label=metric.name),
        title=f"Metric: {metric.name}",
        description=metric.info.description + '\nA list is written as JSON, e.g. ["A", "B", "C"].',
        article=parse_readme(readme),
        api_name="compute",
    )
