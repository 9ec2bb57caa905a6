"""Compatibility package: scripts written for Azure ML Workbench (2017) run unchanged.

mlw provides only `azureml.logging`. The package extends its path over every `azureml` folder on
sys.path, so that other installed `azureml.*` packages (azureml-core, azureml-dataprep, ...) stay
importable beside it.
"""

__path__ = __import__("pkgutil").extend_path(__path__, __name__)
