"""Public benchmarks as suite folders: ``pdesharp suite import FORMAT ...``.

Each importer writes one case folder per problem it can convert and lists the others, with the
reason, in ``refused.json`` (shown in the suite's table); nothing it reads is trusted.
"""

FORMATS = ("pdeagent", "codepde", "apebench")
