"""pdesharp: the PDE-SHARP pipeline (Analysis -> Genesis -> Synthesis) for PDE solvers."""

__version__ = "0.1.0"
