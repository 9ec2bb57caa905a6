"""Compatibility package: scripts written for Azure ML Workbench (2017) run unchanged."""
