"""The offline policies: deterministic Python "agents" that drive the real team with no
language model (through :class:`~d2_notebook.llm.offline.FunctionModel`).

- :mod:`.team_policy`: the base, :class:`TeamPolicy` (one method per role) and
  :class:`Turn` (what a role sees of its request).
- :mod:`.hospital`: :class:`HospitalWalkthrough`, the scripted investigation of the
  bundled hospital demo (``d2 demo``, the example notebook, tests).
- :mod:`.sql_city`: the SQL City policies of the benchmark (oracle, greedy) and the
  teaching walk-through of one case.
- :mod:`.naive`: :class:`NaivePolicy`, which knows no domain and acts only on what the
  analysis tools and the digest show (the check that breadth comes from the system).

Every query a policy asks for still runs through the guarded SQL and every write goes
through the team's tools, so a scripted run fills a real board.
"""
