"""Interactive figures of the report, drawn with Bokeh (hover, zoom, pan, tap).

Each function returns a Bokeh model; :func:`dolda.interpret.report.make_report` embeds
them with :func:`bokeh.embed.components` and BokehJS inlined once, so the
report needs no network.  Taps call functions of the page's script
(``window.doldaShowTopic(k)``, ``window.doldaShowClass(label)``) when present.
"""

from __future__ import annotations

import numpy as np

__all__ = ["intertopic_map", "coefficient_heatmap", "loglik_trace", "reliability_diagram",
           "confusion_heatmap"]

SIGNAL_POS = "#c0392b"
SIGNAL_NEG = "#2471a3"
PLAIN = "#95a5a6"
_TOOLS = "pan,wheel_zoom,box_zoom,reset,save"


def _figure(**kwargs):
    from bokeh.plotting import figure

    kwargs.setdefault("tools", _TOOLS)
    kwargs.setdefault("sizing_mode", "stretch_width")
    fig = figure(**kwargs)
    fig.toolbar.logo = None
    return fig


def _tap_callback(source, function, column):
    from bokeh.models import CustomJS

    return CustomJS(args=dict(source=source), code=f"""
const i = source.selected.indices[0];
if (i !== undefined && window.{function}) {{ window.{function}(source.data['{column}'][i]); }}
""")


def intertopic_map(coords, shares, names, top_words, signal_for, height=460):
    """Topics as circles placed by MDS of their Jensen-Shannon distances.

    Parameters
    ----------
    coords : (K, 2) MDS coordinates.
    shares : (K,) token shares (circle areas).
    names : (K,) topic names.
    top_words : (K,) str, the topic's top words.
    signal_for : (K,) str, the classes the topic is a signal for ("" when none).
    """
    from bokeh.models import ColumnDataSource, HoverTool, TapTool

    shares = np.asarray(shares, dtype=np.float64)
    radius = np.sqrt(shares / max(shares.max(), 1e-12))
    span = max(np.ptp(coords[:, 0]), np.ptp(coords[:, 1]), 1e-6)
    source = ColumnDataSource(dict(
        x=coords[:, 0], y=coords[:, 1], r=0.09 * span * np.maximum(radius, 0.15),
        topic=list(names), index=list(range(len(names))), share=shares * 100,
        words=list(top_words), signal=list(signal_for),
        color=[SIGNAL_POS if s else PLAIN for s in signal_for]))
    fig = _figure(height=height, title="Intertopic map (click a topic)", match_aspect=True,
                  x_axis_label="MDS 1 (Jensen-Shannon)", y_axis_label="MDS 2")
    fig.circle("x", "y", radius="r", source=source, fill_color="color", fill_alpha=0.45,
               line_color="#2c3e50", line_width=1, selection_fill_alpha=0.8,
               nonselection_fill_alpha=0.3)
    fig.text("x", "y", text="index", source=source, text_align="center",
             text_baseline="middle", text_font_size="9pt")
    fig.add_tools(HoverTool(tooltips=[("topic", "@topic"), ("tokens", "@share{0.0}%"),
                                      ("words", "@words"), ("signal for", "@signal")]))
    tap = TapTool()
    fig.add_tools(tap)
    source.selected.js_on_change("indices", _tap_callback(source, "doldaShowTopic", "index"))
    return fig


def coefficient_heatmap(classes, topics, coef, lower, upper, top_words, height=None):
    """Class x topic heat map of the posterior-mean coefficients, signal cells outlined.

    ``coef, lower, upper``: (L, K) arrays; ``top_words``: (K,) str.
    """
    from bokeh.models import ColumnDataSource, HoverTool, LinearColorMapper, TapTool
    from bokeh.palettes import RdBu11

    L, K = coef.shape
    classes = [str(c) for c in classes]
    topics = [str(t) for t in topics]
    ci, ki = np.meshgrid(np.arange(L), np.arange(K), indexing="ij")
    ci, ki = ci.ravel(), ki.ravel()
    sig = ((lower > 0) | (upper < 0)).ravel()
    source = ColumnDataSource(dict(
        cls=[classes[i] for i in ci], topic=[topics[k] for k in ki],
        coef=coef.ravel(), lo=lower.ravel(), hi=upper.ravel(),
        words=[top_words[k] for k in ki], line=np.where(sig, 1.5, 0.0),
        signal=np.where(sig, "yes", "no")))
    bound = float(np.max(np.abs(coef))) or 1.0
    mapper = LinearColorMapper(palette=list(RdBu11), low=-bound, high=bound)  # blue low, red high
    height = height or int(min(1400, max(260, 16 * L + 120)))
    fig = _figure(height=height, x_range=topics, y_range=list(reversed(classes)),
                  title="Coefficients eta (class x topic); outlined: signal topics",
                  x_axis_location="above")
    fig.rect("topic", "cls", 1, 1, source=source, fill_color={"field": "coef",
                                                              "transform": mapper},
             line_color="#222222", line_width="line", hover_line_color="#000000")
    fig.xaxis.major_label_orientation = 1.2
    fig.xaxis.major_label_text_font_size = "7pt" if K > 40 else "9pt"
    fig.yaxis.major_label_text_font_size = "7pt" if L > 40 else "9pt"
    fig.grid.visible = False
    fig.add_tools(HoverTool(tooltips=[("class", "@cls"), ("topic", "@topic"),
                                      ("coef", "@coef{+0.00}"), ("interval", "[@lo{+0.00}, "
                                                                 "@hi{+0.00}]"),
                                      ("signal", "@signal"), ("words", "@words")]))
    fig.add_tools(TapTool())
    source.selected.js_on_change("indices", _tap_callback(source, "doldaShowClass", "cls"))
    from bokeh.models import ColorBar

    fig.add_layout(ColorBar(color_mapper=mapper, width=10), "right")
    return fig


def loglik_trace(loglik, burn_in, height=300):
    """Log-likelihood of every iteration, one line per chain, burn-in shaded.

    ``loglik``: the model's ``loglik_`` DataFrame indexed by (chain, iteration).
    """
    from bokeh.models import BoxAnnotation, HoverTool
    from bokeh.palettes import Category10_10

    fig = _figure(height=height, title="Log-likelihood trace", x_axis_label="iteration",
                  y_axis_label="log-likelihood")
    for c, (chain, frame) in enumerate(loglik.groupby(level="chain")):
        it = frame.index.get_level_values("iteration").to_numpy()
        fig.line(it, frame["total"].to_numpy(), line_width=1.5,
                 color=Category10_10[c % 10], legend_label=f"chain {chain}")
    fig.add_layout(BoxAnnotation(right=burn_in, fill_color="#888888", fill_alpha=0.12))
    fig.add_tools(HoverTool(tooltips=[("iteration", "$x{0}"), ("log-likelihood", "$y{0}")]))
    fig.legend.location = "bottom_right"
    return fig


def reliability_diagram(confidence, accuracy, count, height=340, name="model", others=None):
    """Observed accuracy against stated confidence, per confidence bin; ``others`` ``{name:
    (confidence, accuracy)}``: other models' curves on the same rows, drawn thinner (the
    legend hides any of them on a click)."""
    from bokeh.models import ColumnDataSource, HoverTool

    count = np.asarray(count, dtype=np.float64)
    source = ColumnDataSource(dict(conf=confidence, acc=accuracy, n=count,
                                   size=6 + 18 * np.sqrt(count / max(count.max(), 1))))
    fig = _figure(height=height, title="Reliability: accuracy against stated probability",
                  x_axis_label="probability of the predicted class",
                  y_axis_label="share predicted correctly", x_range=(0, 1), y_range=(0, 1))
    fig.line([0, 1], [0, 1], line_dash="dashed", color="#7f8c8d", legend_label="calibrated")
    palette = ("#7f8c8d", "#2980b9", "#8e44ad", "#16a085")
    for i, (other, (c, a)) in enumerate((others or {}).items()):
        fig.line(list(c), list(a), color=palette[(i + 1) % len(palette)], line_width=1,
                 alpha=0.8, legend_label=str(other))
    line = fig.line("conf", "acc", source=source, color=SIGNAL_NEG, line_width=2,
                    legend_label=str(name))
    fig.scatter("conf", "acc", size="size", source=source, color=SIGNAL_NEG, alpha=0.7)
    fig.add_tools(HoverTool(renderers=[line], tooltips=[("stated", "@conf{0.00}"),
                                                        ("observed", "@acc{0.00}"),
                                                        ("documents", "@n{0}")]))
    fig.legend.location = "top_left"
    fig.legend.click_policy = "hide"
    return fig


def confusion_heatmap(labels, matrix, height=None):
    """Confusion matrix (rows: true class, columns: predicted), for few classes."""
    from bokeh.models import ColumnDataSource, HoverTool, LinearColorMapper
    from bokeh.palettes import Blues9

    labels = [str(c) for c in labels]
    L = len(labels)
    share = matrix / np.maximum(matrix.sum(axis=1, keepdims=True), 1)
    ti, pi = np.meshgrid(np.arange(L), np.arange(L), indexing="ij")
    source = ColumnDataSource(dict(true=[labels[i] for i in ti.ravel()],
                                   pred=[labels[j] for j in pi.ravel()],
                                   n=matrix.ravel(), share=share.ravel()))
    mapper = LinearColorMapper(palette=list(reversed(Blues9)), low=0, high=1)
    fig = _figure(height=height or int(max(300, 22 * L + 140)), x_range=labels,
                  y_range=list(reversed(labels)), x_axis_label="predicted",
                  y_axis_label="true", title="Confusion matrix (share of each true class)")
    fig.rect("pred", "true", 1, 1, source=source,
             fill_color={"field": "share", "transform": mapper}, line_color=None)
    fig.text("pred", "true", text="n", source=source, text_align="center",
             text_baseline="middle", text_font_size="8pt")
    fig.xaxis.major_label_orientation = 1.0
    fig.grid.visible = False
    fig.add_tools(HoverTool(tooltips=[("true", "@true"), ("predicted", "@pred"),
                                      ("documents", "@n"), ("share", "@share{0.0%}")]))
    return fig
