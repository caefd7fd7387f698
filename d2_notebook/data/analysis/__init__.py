"""Analysis tools: SQL we generate, one pass over every candidate dimension, with tests.

``segment_scan``, ``compare_within``, ``trend`` and ``decompose`` take a
:class:`~d2_notebook.data.GuardedSQL` and the keyword arguments of their tool schemas
(:data:`TOOL_SPECS`), run one generated statement through the guard and return an
:class:`AnalysisResult` (a ``QueryResult``: ``sql`` is the generated statement, ``frame``
the rows, ``summary`` the text a model reads, ``flags`` the typed findings).
"""

from d2_notebook.data.analysis.compare_within import compare_within
from d2_notebook.data.analysis.decompose import decompose
from d2_notebook.data.analysis.result import AnalysisResult, AnalysisTool, Flag, FlagKind
from d2_notebook.data.analysis.segment_scan import segment_scan
from d2_notebook.data.analysis.specs import TOOL_SPECS, AnalysisToolSpec, spec_for
from d2_notebook.data.analysis.trend import trend

__all__ = [
    "TOOL_SPECS",
    "AnalysisResult",
    "AnalysisTool",
    "AnalysisToolSpec",
    "Flag",
    "FlagKind",
    "compare_within",
    "decompose",
    "segment_scan",
    "spec_for",
    "trend",
]
