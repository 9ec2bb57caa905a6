# Uses the native share as the 2017 samples did: AZUREML_NATIVE_SHARE_DIRECTORY is a folder of
# this project and compute target that persists across runs, and its value ends with a slash, so
# that paths are built by concatenation. Each run counts itself in a file there.
import os

from azureml.logging import get_azureml_logger

share_dir = os.environ["AZUREML_NATIVE_SHARE_DIRECTORY"]
counter = share_dir + "runs.txt"
count = int(open(counter).read()) + 1 if os.path.exists(counter) else 1
with open(counter, "w") as f:
    f.write(str(count))
print("share: {} run {}".format(share_dir, count))
get_azureml_logger().log("Runs Seen", count)
