"""The one WARNING of the scorers when the vectors they score look out of the training domain
(models.domain: the mean shift in training within-speaker standard deviations)."""

from pauc_backend.models.domain import OUT_OF_DOMAIN_SHIFT, is_out_of_domain


def describe_shift(shift):
    """The measure in words, for a LOG line (e.g. train-pauc-auto --adapt) or the WARNING."""
    return ("their mean lies %.2f within-speaker standard deviations from the training mean "
            "(RMS over the dimensions; out of domain above %g)" % (shift, OUT_OF_DOMAIN_SHIFT))


def warn_if_out_of_domain(log, shift, what, remedy, domain="the training domain"):
    """One WARNING naming ``what`` was measured, the ``domain`` it was compared with and the
    ``remedy`` when ``shift`` is above OUT_OF_DOMAIN_SHIFT; returns whether it warned. Call it
    once per run, after the tables are read and before the trials are scored."""
    if not is_out_of_domain(shift):
        return False
    log.warning("The %s look out of %s: %s. Scores of such vectors lose accuracy; %s"
                % (what, domain, describe_shift(shift), remedy))
    return True
