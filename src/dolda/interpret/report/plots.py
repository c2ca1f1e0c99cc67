"""Figures of a fitted DOLDA model, drawn with matplotlib's Agg canvas.

Every function takes an optional ``ax``; without it a new
:class:`matplotlib.figure.Figure` (not registered with pyplot, so nothing is
shown or leaked) is made.  All return the Figure.  :func:`figure_to_png`
renders one to PNG bytes for the HTML report.
"""

from __future__ import annotations

import io

import numpy as np

SIGNAL_COLOR = "#c0392b"
PLAIN_COLOR = "#34495e"


def _new_axes(ax, width, height):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    if ax is not None:
        return ax.figure, ax
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot()


def figure_to_png(fig, dpi=100):
    """Render a Figure as PNG bytes (Agg)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    if not isinstance(fig.canvas, FigureCanvasAgg):
        FigureCanvasAgg(fig)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()


def _intervals(model, level):
    lo, hi = model.coef_interval(level)
    return model.coef_, lo, hi


def _topic_columns(model):
    return [c for c in model.coef_.columns if str(c).startswith("topic ")]


def plot_coefficients(model, label, level=0.95, max_features=60, ax=None):
    """Posterior means and ``level`` credible intervals of the coefficients of one class.

    Parameters
    ----------
    model : fitted DOLDA
    label : a class label of ``model.classes_``
    level : float, default=0.95
    max_features : int, default=60
        With more features (intercept excluded), only the ``max_features``
        largest in |posterior mean| are drawn.
    ax : matplotlib Axes or None

    Returns
    -------
    matplotlib.figure.Figure
        Intervals that exclude zero (signal) are drawn in red.
    """
    if label not in set(model.classes_.tolist()):
        raise ValueError(f"unknown class {label!r}; classes are {list(model.classes_)}")
    mean, lo, hi = _intervals(model, level)
    features = [c for c in mean.columns if c != "(intercept)"]
    m, l_, h = (frame.loc[label, features].to_numpy() for frame in (mean, lo, hi))
    order = np.arange(len(features))
    if len(features) > max_features:
        order = np.sort(np.argsort(-np.abs(m))[:max_features])
    fig, ax = _new_axes(ax, 6.5, 0.6 + 0.22 * len(order))
    y = np.arange(len(order))[::-1]
    signal = (l_[order] > 0) | (h[order] < 0)
    colors = np.where(signal, SIGNAL_COLOR, PLAIN_COLOR)
    for yi, j, c in zip(y, order, colors):
        ax.plot([l_[j], h[j]], [yi, yi], color=c, lw=1.5)
    ax.scatter(m[order], y, c=list(colors), s=14, zorder=3)
    ax.axvline(0.0, color="0.6", lw=0.8)
    ax.set_yticks(y, [features[j] for j in order], fontsize=8)
    ax.set_ylim(-0.8, len(order) - 0.2)
    ax.set_xlabel(f"eta (posterior mean, {level:.0%} interval; red: excludes 0)")
    ax.set_title(f"class {label}")
    return fig


def plot_topic_heatmap(model, level=0.95, ax=None):
    """Class x topic heat map of the posterior-mean topic coefficients.

    Cells whose ``level`` credible interval excludes zero (the signal topics
    of :meth:`dolda.DOLDA.signal_topics`) are outlined and marked ``*``.

    Returns
    -------
    matplotlib.figure.Figure
    """
    mean, lo, hi = _intervals(model, level)
    topics = _topic_columns(model)
    values = mean[topics].to_numpy()
    signal = ((lo[topics] > 0) | (hi[topics] < 0)).to_numpy()
    n_classes, n_topics = values.shape
    fig, ax = _new_axes(ax, min(max(5.5, 2.0 + 0.35 * n_topics), 24.0), 1.6 + 0.4 * n_classes)
    limit = float(np.max(np.abs(values))) or 1.0
    image = ax.imshow(values, cmap="RdBu_r", vmin=-limit, vmax=limit, aspect="auto")
    for l, k in zip(*np.nonzero(signal)):
        ax.add_patch(_rectangle((k - 0.5, l - 0.5)))
        ax.text(k, l, "*", ha="center", va="center", fontsize=12, color="black")
    ax.set_xticks(np.arange(n_topics), [t.removeprefix("topic ") for t in topics],
                  fontsize=7 if n_topics > 30 else 9)
    ax.set_yticks(np.arange(n_classes), [str(c) for c in model.classes_])
    ax.set_xlabel("topic")
    ax.set_ylabel("class")
    ax.set_title(f"topic coefficients (* : {level:.0%} interval excludes 0)")
    fig.colorbar(image, ax=ax, shrink=0.9, label="eta")
    return fig


def _rectangle(corner):
    from matplotlib.patches import Rectangle

    return Rectangle(corner, 1.0, 1.0, fill=False, edgecolor="black", lw=1.5)


def plot_coefficient_histogram(model, bins=60, ax=None):
    """Histogram of the posterior means of all coefficients but the intercepts.

    Under the Horseshoe most coefficients pile up at zero and a few signal
    coefficients stand apart.

    Returns
    -------
    matplotlib.figure.Figure
    """
    features = [c for c in model.coef_.columns if c != "(intercept)"]
    values = model.coef_[features].to_numpy().ravel()
    fig, ax = _new_axes(ax, 6.5, 3.2)
    ax.hist(values, bins=bins, color=PLAIN_COLOR)
    ax.set_xlabel("posterior mean of eta")
    ax.set_ylabel("coefficients")
    ax.set_title(f"all {values.size} coefficients (intercepts excluded)")
    return fig


def plot_trace(model, part="total", ax=None):
    """Log-likelihood per Gibbs iteration, one line per chain, burn-in shaded.

    Parameters
    ----------
    model : fitted DOLDA
    part : {"total", "do", "lda"}, default="total"
        A column of ``model.loglik_``.

    Returns
    -------
    matplotlib.figure.Figure
    """
    from ...utils.validation import check_burn_in

    trace = model.loglik_[part]
    fig, ax = _new_axes(ax, 7.5, 3.4)
    for chain, values in trace.groupby(level="chain"):
        ax.plot(values.index.get_level_values("iteration"), values.to_numpy(), lw=1.0,
                label=f"chain {chain}")
    burn_in = check_burn_in(model.burn_in, model.n_iter_)
    if burn_in > 0:
        ax.axvspan(0, burn_in, color="0.9", zorder=0, label="burn-in")
    ax.set_xlabel("iteration")
    ax.set_ylabel(f"log-likelihood ({part})")
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title("log-likelihood trace")
    return fig


def plot_confusion_matrix(y_true, y_pred, classes, ax=None):
    """Confusion matrix (rows: true class, columns: predicted class) with counts.

    Returns
    -------
    matplotlib.figure.Figure
    """
    from sklearn.metrics import confusion_matrix

    classes = list(classes)
    matrix = confusion_matrix(np.asarray(y_true, dtype=object),
                              np.asarray(y_pred, dtype=object), labels=classes)
    n = len(classes)
    fig, ax = _new_axes(ax, 1.8 + 0.6 * n, 1.4 + 0.6 * n)
    ax.imshow(matrix, cmap="Blues")
    threshold = matrix.max() / 2 if matrix.size else 0
    for i in range(n):
        for j in range(n):
            ax.text(j, i, str(matrix[i, j]), ha="center", va="center",
                    color="white" if matrix[i, j] > threshold else "black")
    ax.set_xticks(np.arange(n), [str(c) for c in classes])
    ax.set_yticks(np.arange(n), [str(c) for c in classes])
    ax.set_xlabel("predicted")
    ax.set_ylabel("true")
    ax.set_title("confusion matrix")
    return fig
