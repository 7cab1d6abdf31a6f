// Internal helpers of the chat layer (include/fdpp/chat.h is the public API).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "fdpp/chat.h"
#include "fdpp/status.h"

namespace fdpp {

// ChatGLM2-6B's prompt (tokenization_chatglm.py build_prompt): rounds of
// "[Round N]\n\n问：{query}\n\n答：{response}\n\n", the last one open after "答：".
Result<std::string> render_chatglm2(const nlohmann::ordered_json& messages, bool add_generation_prompt);

}  // namespace fdpp
