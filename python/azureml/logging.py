"""The 2017 `azureml.logging` API, backed by mlw's metrics file:

    from azureml.logging import get_azureml_logger
    logger = get_azureml_logger()
    logger.log("Accuracy", 0.93)
"""

import mlw


class _Pending:
    """What Workbench's log() returned: an object whose wait() blocks until it is recorded."""

    def wait(self):
        return None


class _Logger:
    def log(self, name, value):
        mlw.log_metric(str(name), value)
        return _Pending()


_logger = _Logger()


def get_azureml_logger():
    """The run's logger (one per process)."""
    return _logger
