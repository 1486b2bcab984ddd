"""Former home of :mod:`shardkit.formats.amudai.blocks`, kept so that older imports work."""

import sys

from .amudai import blocks as _blocks

sys.modules[__name__] = _blocks
