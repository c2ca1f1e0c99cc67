"""``--help`` of the model commands in the groups of the estimator's parameters.

``dolda fit --help`` lists its options under the same headings as :class:`dolda.DOLDA`'s
parameter groups (the text, the words, the prior, the sampler, ...), so that the command line
and the library read alike.
"""

from __future__ import annotations

import click

#: Option (its parameter name) -> heading; options not listed go under "Other".
SECTIONS = {
    "Data": ("data", "text_column", "label_column", "covariates", "encoding", "time_column"),
    "Model": ("n_topics", "alpha", "beta", "n_chains", "topic_init", "seed", "two_step",
              "calibration_holdout"),
    "Chain": ("n_iter", "burn_in", "threads", "quiet"),
    "Prior (dolda.Prior)": ("prior", "slab_scale", "slab_blocks"),
    "Words (dolda.Words)": ("n_words", "word_features", "word_prior", "word_prior_variance"),
    "Text (dolda.Text)": ("rare_share", "min_df", "max_df", "stop_words", "token_pattern"),
    "Covariates (dolda.Covariates)": ("covariate_min_count",),
    "Checkpoint (dolda.Checkpoint)": ("checkpoint", "checkpoint_every", "resume"),
    "Dask (dolda.Dask)": ("scheduler", "n_shards", "phi_transport", "connect_timeout"),
    "Output": ("out", "overwrite"),
}


class SectionedCommand(click.Command):
    """A command whose ``--help`` groups the options under :data:`SECTIONS`' headings."""

    def format_options(self, ctx, formatter):
        where = {name: title for title, names in SECTIONS.items() for name in names}
        rows: dict = {title: [] for title in list(SECTIONS) + ["Other"]}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is not None:
                rows[where.get(param.name, "Other")].append(record)
        for title, records in rows.items():
            if records:
                with formatter.section(title):
                    formatter.write_dl(records)
