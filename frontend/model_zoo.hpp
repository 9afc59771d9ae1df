// Model zoo: built-in models expanded into their tunable tasks, so a job can say
// "model": "resnet50" without an ONNX file. Layer shapes follow the reference
// architectures (torchvision ResNet-50 v1.5, BERT-base, MobileNet-v2); each conv
// or matmul carries the epilogue chain that fusion may pull in (conv+bias+relu,
// conv+bias+add+relu for residuals, matmul+bias+gelu, matmul+bias+add+layernorm). An
// inference BatchNormalization after a conv folds into the conv's weights and bias, as
// every inference compiler folds it: the tables say "batchnorm", the tasks carry "bias".
// Pooling, embedding gathers and head transposes are tasks too: no zoo model has an
// untuned op (reshapes and flattens move no data).
// Pure functions: thread-safe.
#pragma once

#include <string>
#include <vector>

#include "frontend/task_set.hpp"
#include "frontend/training.hpp"

namespace atvoss::frontend {

// resnet50 (batch 1), resnet50-b32 (batch 32), bert-base (sequence 128, batch 1),
// bert-large (24 layers, hidden 1024, 16 heads, FFN 4096; sequence 128) and bert-large-s512
// (sequence 512), mobilenet-v2 (batch 1), mlp (784-512-256-10, batch 64), yolov7-tiny
// (640 x 640), esrgan-rrdb (the RRDB body on 128 x 128), moe-block (a Mixtral-style block,
// 512 tokens per batch item); the training steps resnet50-train (batch 32) and
// bert-base-train.
const std::vector<std::string>& zoo_names();
bool is_zoo_model(const std::string& name);
// The batch a zoo model has unless told (0 for a name not in the zoo).
int zoo_batch(const std::string& name);
// The model at batch (0: its own); a batch other than the zoo's own shows in the model's name
// ("mlp-b8"). setup: how a training step (the "-train" names) updates its weights; any other
// model's step is training_tasks(zoo_model(...), setup) (frontend/training.hpp). bad_input
// listing zoo_names() if name is unknown, naming batch when it is outside 0..4096.
TaskSet zoo_model(const std::string& name, int batch = 0, const TrainingSetup& setup = {});

}  // namespace atvoss::frontend
