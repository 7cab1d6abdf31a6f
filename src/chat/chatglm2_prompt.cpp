#include "chat/chat_template.h"

namespace fdpp {

Result<std::string> render_chatglm2(const nlohmann::ordered_json& messages, bool add_generation_prompt) {
  std::string prompt;
  int round = 1;
  bool open = false;  // a query was written and its answer not yet
  for (const auto& m : messages) {
    std::string role = m.value("role", "");
    std::string content = m.contains("content") && m["content"].is_string() ? m["content"].get<std::string>() : "";
    if (role == "user") {
      if (open) return InvalidArgument("ChatGLM2's prompt format needs an assistant reply between two user messages");
      prompt += "[Round " + std::to_string(round) + "]\n\n问：" + content + "\n\n答：";
      open = true;
    } else if (role == "assistant") {
      if (!open) return InvalidArgument("ChatGLM2's prompt format needs a user message before each assistant reply");
      prompt += content + "\n\n";
      open = false;
      ++round;
    } else {
      return InvalidArgument("ChatGLM2's prompt format has no '" + role + "' role (only user and assistant)");
    }
  }
  if (!open && add_generation_prompt) {
    // build_prompt always ends in an open round; without a new query there is nothing to answer.
    return InvalidArgument("ChatGLM2's prompt format needs the conversation to end with a user message");
  }
  return prompt;
}

}  // namespace fdpp
