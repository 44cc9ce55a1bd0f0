#include "runtime/tokenizer/ChatTemplate.h"

namespace hetrt::tokenizer {

namespace {

bool contains(const std::string &text, const char *marker) {
  return text.find(marker) != std::string::npos;
}

/// Without leading and trailing whitespace, as the templates' `trim` and
/// `strip()` do.
std::string trimmed(const std::string &text) {
  const char *space = " \t\n\r\f\v";
  size_t first = text.find_first_not_of(space);
  if (first == std::string::npos)
    return "";
  return text.substr(first, text.find_last_not_of(space) - first + 1);
}

} // namespace

const std::vector<std::string> &chatTemplateNames() {
  static const std::vector<std::string> names = {
      "llama2", "llama3", "mistral", "chatml",
      "gemma",  "phi3",   "zephyr",  "deepseek"};
  return names;
}

std::string chatTemplateName(ChatTemplate chatTemplate) {
  return chatTemplateNames()[static_cast<size_t>(chatTemplate)];
}

std::optional<ChatTemplate> chatTemplateNamed(const std::string &name,
                                              std::string &error) {
  const std::vector<std::string> &names = chatTemplateNames();
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name)
      return static_cast<ChatTemplate>(i);
  std::string list;
  for (const std::string &known : names)
    list += (list.empty() ? "" : ", ") + known;
  error = "\"" + name + "\" is not a chat template hetc knows; give one of " +
          list;
  return std::nullopt;
}

std::optional<ChatTemplate> detectChatTemplate(const std::string &jinja) {
  if (contains(jinja, "<|im_start|>"))
    return ChatTemplate::ChatML;
  if (contains(jinja, "<|start_header_id|>"))
    return ChatTemplate::Llama3;
  if (contains(jinja, "<start_of_turn>"))
    return ChatTemplate::Gemma;
  // Both write <|assistant|>; Phi-3 closes turns with <|end|>.
  if (contains(jinja, "<|assistant|>") && contains(jinja, "<|end|>"))
    return ChatTemplate::Phi3;
  if (contains(jinja, "<|user|>"))
    return ChatTemplate::Zephyr;
  // DeepSeek's markers use fullwidth bars (U+FF5C).
  if (contains(jinja, "<\xef\xbd\x9cUser\xef\xbd\x9c>") ||
      contains(jinja, "<\xef\xbd\x9c" "Assistant\xef\xbd\x9c>"))
    return ChatTemplate::DeepSeek;
  if (contains(jinja, "[INST]"))
    return contains(jinja, "<<SYS>>") ? ChatTemplate::Llama2
                                      : ChatTemplate::Mistral;
  return std::nullopt;
}

std::optional<std::string> renderChat(ChatTemplate chatTemplate,
                                      const std::vector<ChatMessage> &messages,
                                      bool addAssistant, const std::string &bos,
                                      const std::string &eos,
                                      std::string &error) {
  for (size_t i = 0; i < messages.size(); ++i) {
    const std::string &role = messages[i].role;
    if (role != "system" && role != "user" && role != "assistant") {
      error = "message " + std::to_string(i) + " has role \"" + role +
              "\"; a chat's roles are system, user and assistant";
      return std::nullopt;
    }
    if (role == "system" && i != 0) {
      error = "message " + std::to_string(i) +
              " is a system message; only the first message may be one";
      return std::nullopt;
    }
  }
  // Families without a system turn put the system prompt before the first
  // user message.
  std::string system;
  size_t first = 0;
  if (!messages.empty() && messages[0].role == "system") {
    system = messages[0].content;
    first = 1;
  }
  std::string out;
  switch (chatTemplate) {
  case ChatTemplate::ChatML:
    for (const ChatMessage &message : messages)
      out += "<|im_start|>" + message.role + "\n" + message.content +
             "<|im_end|>\n";
    if (addAssistant)
      out += "<|im_start|>assistant\n";
    break;
  case ChatTemplate::Llama3:
    for (const ChatMessage &message : messages)
      out += "<|start_header_id|>" + message.role + "<|end_header_id|>\n\n" +
             trimmed(message.content) + "<|eot_id|>";
    if (addAssistant)
      out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
    break;
  case ChatTemplate::Llama2:
  case ChatTemplate::Mistral: {
    // Llama 2 opens each user turn with BOS (the first one the tokenizer
    // writes), Mistral only the first; the assistant's turn is open after
    // [/INST].
    bool llama2 = chatTemplate == ChatTemplate::Llama2;
    bool firstUser = true;
    for (size_t i = first; i < messages.size(); ++i) {
      const ChatMessage &message = messages[i];
      if (message.role == "user") {
        std::string content = message.content;
        if (firstUser && first == 1)
          content = llama2 ? "<<SYS>>\n" + system + "\n<</SYS>>\n\n" + content
                           : system + "\n\n" + content;
        if (llama2)
          content = trimmed(content);
        out += (firstUser || !llama2 ? std::string() : bos) + "[INST] " +
               content + " [/INST]";
        firstUser = false;
      } else if (llama2) {
        out += " " + trimmed(message.content) + " " + eos;
      } else {
        out += message.content + eos;
      }
    }
    break;
  }
  case ChatTemplate::Gemma: {
    bool firstUser = true;
    for (size_t i = first; i < messages.size(); ++i) {
      const ChatMessage &message = messages[i];
      std::string content = trimmed(message.content);
      if (message.role == "user" && firstUser && first == 1)
        content = trimmed(system) + "\n\n" + content;
      firstUser = firstUser && message.role != "user";
      out += "<start_of_turn>" +
             std::string(message.role == "assistant" ? "model" : "user") +
             "\n" + content + "<end_of_turn>\n";
    }
    if (addAssistant)
      out += "<start_of_turn>model\n";
    break;
  }
  case ChatTemplate::Phi3:
    for (const ChatMessage &message : messages)
      out += "<|" + message.role + "|>\n" + message.content + "<|end|>\n";
    out += addAssistant ? "<|assistant|>\n" : eos;
    break;
  case ChatTemplate::Zephyr:
    for (const ChatMessage &message : messages)
      out += "<|" + message.role + "|>\n" + message.content + eos + "\n";
    if (addAssistant)
      out += "<|assistant|>\n";
    break;
  case ChatTemplate::DeepSeek: {
    const std::string user = "<\xef\xbd\x9cUser\xef\xbd\x9c>";
    const std::string assistant = "<\xef\xbd\x9c" "Assistant\xef\xbd\x9c>";
    out += system;
    for (size_t i = first; i < messages.size(); ++i) {
      const ChatMessage &message = messages[i];
      out += message.role == "user"
                 ? user + message.content
                 : assistant + message.content + eos;
    }
    if (addAssistant)
      out += assistant;
    break;
  }
  }
  return out;
}

} // namespace hetrt::tokenizer
