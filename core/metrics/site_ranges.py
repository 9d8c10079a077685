"""Every figure's valid range for this site: its [limits] and shipper.max_job_days, read
once per process (the defaults where the site file cannot be read)."""
from .index import RANGES

_site = {}


def bounds(limits=None):
    """The valid range of every figure (jobmon.metrics.ranges.Bounds): for `limits`, else
    for the site's ([limits] and shipper.max_job_days of the site file; the defaults where
    it cannot be read). The site's are read once per process."""
    from .ranges import Bounds
    if limits is not None:
        return Bounds(RANGES, limits)
    if "bounds" not in _site:
        _site["bounds"] = Bounds(RANGES, site_limits())
    return _site["bounds"]


def site_limits():
    """The site's limits for jobmon.metrics.ranges.kinds."""
    try:
        from .. import config
        cfg = config.load()
        return dict(cfg["limits"], max_job_days=cfg["shipper"]["max_job_days"])
    except Exception:   # a reader goes on with the defaults (config check says what is wrong)
        return None
