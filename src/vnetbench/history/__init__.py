"""Runs over time: one store of many runs, each headline cell a series, change points found
in it (``vnetbench history``).

    store     the database file: runs, their samples, labels and provenance, and each run's
              headline cells (``HistoryStore``; schema in its docstring, versioned)
    cells     a run's headline cells as its own engine judged them: each layer's paired
              ratio to the baseline with interval and floor, the baseline's own level
    changes   change points of one series: E-divisive means, each split tested, and kept
              only beyond the runs' own noise floors
    series    the store's series and their change points, what changed across each
    check     the newest runs against their history, as text, Markdown or JUnit (exit 1 on
              a change among them)
    export    the series as OpenMetrics text and a Grafana dashboard
    page      the store as a page: a trend chart per cell, change points marked
"""
