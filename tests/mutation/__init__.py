"""Mutation testing of the rule modules and the SQL: ``python -m tests.mutation`` (README.md in this folder)."""
