// A chat as the prompt text a model was trained on. Models ship their
// template as Jinja (GGUF tokenizer.chat_template); there is no Jinja
// library to run it, so, as llama.cpp does, the template is recognized as one
// of the families in use by the markers it writes, and that family's
// rendering is applied.
#ifndef HETRT_TOKENIZER_CHATTEMPLATE_H
#define HETRT_TOKENIZER_CHATTEMPLATE_H

#include <optional>
#include <string>
#include <vector>

namespace hetrt::tokenizer {

enum class ChatTemplate {
  /// Llama 2 chat: [INST] turns, the system prompt in <<SYS>> of the first.
  Llama2,
  /// Llama 3: <|start_header_id|>role<|end_header_id|> turns.
  Llama3,
  /// Mistral instruct: [INST] turns, the system prompt before the first.
  Mistral,
  /// ChatML (Qwen and many fine-tunes): <|im_start|>role turns.
  ChatML,
  /// Gemma: <start_of_turn>user / model turns.
  Gemma,
  /// Phi-3: <|role|> turns closed by <|end|>.
  Phi3,
  /// Zephyr: <|role|> turns closed by the end-of-sequence token.
  Zephyr,
  /// DeepSeek V3 and R1: <｜User｜> and <｜Assistant｜> turns.
  DeepSeek,
};

struct ChatMessage {
  /// "system", "user" or "assistant".
  std::string role;
  std::string content;
};

/// The names --chat-template takes, in the order of the enum.
const std::vector<std::string> &chatTemplateNames();
std::string chatTemplateName(ChatTemplate chatTemplate);
/// The template of a name, or nothing with `error` listing the names.
std::optional<ChatTemplate> chatTemplateNamed(const std::string &name,
                                              std::string &error);

/// The family of a Jinja template by the markers it writes; nothing when
/// none matches.
std::optional<ChatTemplate> detectChatTemplate(const std::string &jinja);

/// The prompt text of `messages` (roles system, user, assistant; a system
/// message only first), ending with the assistant's turn opened when
/// `addAssistant`. `bos` and `eos` are the vocabulary's beginning- and
/// end-of-sequence texts, which some families write between turns; the
/// text starts after the BOS the tokenizer adds. Nothing, with `error`
/// naming the message, for another role or a misplaced system message.
std::optional<std::string> renderChat(ChatTemplate chatTemplate,
                                      const std::vector<ChatMessage> &messages,
                                      bool addAssistant, const std::string &bos,
                                      const std::string &eos,
                                      std::string &error);

} // namespace hetrt::tokenizer

#endif // HETRT_TOKENIZER_CHATTEMPLATE_H
