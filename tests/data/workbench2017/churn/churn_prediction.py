# A churn model in the shape of the 2017 Workbench customer-churn sample, written for mlw's tests:
# synthetic telecom customers, a one-feature threshold classifier chosen on the training part,
# its accuracy and the churn rate logged with azureml.logging, the model pickled into ./outputs.
import os
import pickle
import random

from azureml.logging import get_azureml_logger

run_logger = get_azureml_logger()
rng = random.Random(2017)
customers = []
for _ in range(400):
    minutes = rng.uniform(0, 300)
    complaints = rng.randint(0, 5)
    churned = (complaints >= 3 and minutes < 200) or rng.random() < 0.05
    customers.append({"minutes": minutes, "complaints": complaints, "churn": churned})
train, test = customers[:300], customers[300:]
churn_rate = sum(c["churn"] for c in customers) / len(customers)
print("customers: {}, churn rate: {:.3f}".format(len(customers), churn_rate))
run_logger.log("Churn Rate", churn_rate)

best = max(range(6), key=lambda t: sum((c["complaints"] >= t) == c["churn"] for c in train))
accuracy = sum((c["complaints"] >= best) == c["churn"] for c in test) / len(test)
print("model: churn when complaints >= {}; accuracy {:.3f}".format(best, accuracy))
run_logger.log("Accuracy", accuracy)

os.makedirs("./outputs", exist_ok=True)
with open("./outputs/churn_model.pkl", "wb") as f:
    pickle.dump({"complaints_threshold": best}, f)
