"""Values typed answers carry often, built once (kio's field types check their range
when made, so a constant is made at import, not per answer)."""

from __future__ import annotations

import datetime

from kio.static.primitive import i32Timedelta

NO_THROTTLE = i32Timedelta.parse(datetime.timedelta(0))  # throttle_time: kop answers at once
