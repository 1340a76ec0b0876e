"""Request dialects the oracle answers: one module per family of prompts.

Each dialect module exposes ``match(request) -> bool`` and ``answer(request, gold) -> Reply``.
They are tried in order (``oracle.DIALECTS``); the first that matches answers.
"""
