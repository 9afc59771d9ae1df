"""Profile a model's operators under their default schedules and print the bottlenecks with
atvoss-analyze's hints. Usage: profile_model.py [MODEL] [TOP] (default: resnet50, 5)"""
import sys

import atvoss

model = sys.argv[1] if len(sys.argv) > 1 else "resnet50"
top = int(sys.argv[2]) if len(sys.argv) > 2 else 5

with atvoss.Profiler() as profiler:
    for task in atvoss.zoo_model(model):
        atvoss.measure(task["workload"], "ascend910", noise=0)
print(f"{model} on ascend910, default schedules:")
print(profiler.summary(top=top))
