// How the engine sets up the attention softmax from EngineOptions (softmax, phi,
// calibration): the modes of prefill and decode, and φ per (layer, head) from the
// calibration file it finds (tuning/calibration.h). Called once, at Engine::create.
#pragma once

#include "fdpp/engine.h"
#include "model/model.h"

namespace fdpp {

Status setup_softmax(const EngineOptions& options, Model& model);

}  // namespace fdpp
