"""Helpers behind the lesson notebooks: plots and widgets, one module per notebook.

Widgets call plain functions, so a notebook (and a test) can call the same functions directly.
"""
