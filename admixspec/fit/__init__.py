"""The orchestration above the estimators: :func:`admixspec.fit_admixture` and the
strategies it runs (in memory, a reference fit with projection, streamed from
disk), the choice between the spectral estimate and maximum likelihood, and
the summary ``admixspec info`` prints."""
