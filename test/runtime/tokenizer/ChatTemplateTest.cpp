// Chat templates: each family renders one conversation (a system prompt,
// two user turns and an assistant turn, the assistant's next turn opened)
// as its Jinja template does, and templates are recognized by their
// markers, a real one (the Phi-3 vocabulary's) among them.
#include "runtime/format/Gguf.h"
#include "runtime/tokenizer/ChatTemplate.h"

#include <gtest/gtest.h>

namespace {

using hetrt::tokenizer::ChatMessage;
using hetrt::tokenizer::ChatTemplate;

const std::vector<ChatMessage> kChat = {
    {"system", "You are a helpful assistant"},
    {"user", "Hello"},
    {"assistant", "Hi there"},
    {"user", "Who are you"},
};

std::string rendered(ChatTemplate chatTemplate,
                     const std::vector<ChatMessage> &chat = kChat) {
  std::string error;
  std::optional<std::string> text = hetrt::tokenizer::renderChat(
      chatTemplate, chat, /*addAssistant=*/true, "<s>", "</s>", error);
  EXPECT_TRUE(text) << error;
  return text.value_or("");
}

TEST(ChatTemplate, EachFamilyRendersTheConversation) {
  EXPECT_EQ(rendered(ChatTemplate::ChatML),
            "<|im_start|>system\nYou are a helpful assistant<|im_end|>\n"
            "<|im_start|>user\nHello<|im_end|>\n"
            "<|im_start|>assistant\nHi there<|im_end|>\n"
            "<|im_start|>user\nWho are you<|im_end|>\n"
            "<|im_start|>assistant\n");
  EXPECT_EQ(rendered(ChatTemplate::Llama3),
            "<|start_header_id|>system<|end_header_id|>\n\n"
            "You are a helpful assistant<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nHi there<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nWho are you<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  EXPECT_EQ(rendered(ChatTemplate::Llama2),
            "[INST] <<SYS>>\nYou are a helpful assistant\n<</SYS>>\n\nHello "
            "[/INST] Hi there </s><s>[INST] Who are you [/INST]");
  EXPECT_EQ(rendered(ChatTemplate::Mistral),
            "[INST] You are a helpful assistant\n\nHello [/INST]Hi there</s>"
            "[INST] Who are you [/INST]");
  EXPECT_EQ(rendered(ChatTemplate::Gemma),
            "<start_of_turn>user\nYou are a helpful assistant\n\nHello"
            "<end_of_turn>\n<start_of_turn>model\nHi there<end_of_turn>\n"
            "<start_of_turn>user\nWho are you<end_of_turn>\n"
            "<start_of_turn>model\n");
  EXPECT_EQ(rendered(ChatTemplate::Phi3),
            "<|system|>\nYou are a helpful assistant<|end|>\n"
            "<|user|>\nHello<|end|>\n<|assistant|>\nHi there<|end|>\n"
            "<|user|>\nWho are you<|end|>\n<|assistant|>\n");
  EXPECT_EQ(rendered(ChatTemplate::Zephyr),
            "<|system|>\nYou are a helpful assistant</s>\n"
            "<|user|>\nHello</s>\n<|assistant|>\nHi there</s>\n"
            "<|user|>\nWho are you</s>\n<|assistant|>\n");
  EXPECT_EQ(rendered(ChatTemplate::DeepSeek),
            "You are a helpful assistant<\xef\xbd\x9cUser\xef\xbd\x9c>Hello"
            "<\xef\xbd\x9c" "Assistant\xef\xbd\x9c>Hi there</s>"
            "<\xef\xbd\x9cUser\xef\xbd\x9c>Who are you"
            "<\xef\xbd\x9c" "Assistant\xef\xbd\x9c>");
}

TEST(ChatTemplate, AConversationWithoutSystemPromptHasNoneOfItsMarkers) {
  std::vector<ChatMessage> chat(kChat.begin() + 1, kChat.end());
  EXPECT_EQ(rendered(ChatTemplate::Llama2, chat),
            "[INST] Hello [/INST] Hi there </s><s>[INST] Who are you [/INST]");
  EXPECT_EQ(rendered(ChatTemplate::Gemma, chat),
            "<start_of_turn>user\nHello<end_of_turn>\n<start_of_turn>model\n"
            "Hi there<end_of_turn>\n<start_of_turn>user\nWho are you"
            "<end_of_turn>\n<start_of_turn>model\n");
}

TEST(ChatTemplate, RolesAreCheckedAndNamed) {
  std::string error;
  EXPECT_FALSE(hetrt::tokenizer::renderChat(
      ChatTemplate::ChatML, {{"user", "a"}, {"tool", "b"}}, true, "", "",
      error));
  EXPECT_EQ(error, "message 1 has role \"tool\"; a chat's roles are system, "
                   "user and assistant");
  EXPECT_FALSE(hetrt::tokenizer::renderChat(
      ChatTemplate::ChatML, {{"user", "a"}, {"system", "b"}}, true, "", "",
      error));
  EXPECT_EQ(error, "message 1 is a system message; only the first message "
                   "may be one");
  EXPECT_FALSE(hetrt::tokenizer::chatTemplateNamed("jinja", error));
  EXPECT_EQ(error, "\"jinja\" is not a chat template hetc knows; give one of "
                   "llama2, llama3, mistral, chatml, gemma, phi3, zephyr, "
                   "deepseek");
  for (const std::string &name : hetrt::tokenizer::chatTemplateNames()) {
    std::optional<ChatTemplate> named =
        hetrt::tokenizer::chatTemplateNamed(name, error);
    ASSERT_TRUE(named) << error;
    EXPECT_EQ(hetrt::tokenizer::chatTemplateName(*named), name);
  }
}

TEST(ChatTemplate, FamiliesAreRecognizedByTheirMarkers) {
  using hetrt::tokenizer::detectChatTemplate;
  EXPECT_EQ(detectChatTemplate("{{'<|im_start|>' + message['role']}}"),
            ChatTemplate::ChatML);
  EXPECT_EQ(detectChatTemplate("{{ '<|start_header_id|>' + role }}"),
            ChatTemplate::Llama3);
  EXPECT_EQ(detectChatTemplate("{{ bos_token + '[INST] ' + '<<SYS>>\\n' }}"),
            ChatTemplate::Llama2);
  EXPECT_EQ(detectChatTemplate("{{ '[INST] ' + message['content'] }}"),
            ChatTemplate::Mistral);
  EXPECT_EQ(detectChatTemplate("{{ '<start_of_turn>' + role }}"),
            ChatTemplate::Gemma);
  EXPECT_EQ(detectChatTemplate("{{ '<|user|>\\n' + content + eos_token }}"),
            ChatTemplate::Zephyr);
  EXPECT_EQ(detectChatTemplate(
                "{{'<\xef\xbd\x9cUser\xef\xbd\x9c>' + message['content']}}"),
            ChatTemplate::DeepSeek);
  EXPECT_FALSE(detectChatTemplate("{{ message['content'] }}"));
  // The template the Phi-3 vocabulary ships.
  std::string error;
  std::unique_ptr<hetrt::format::GgufFile> file =
      hetrt::format::GgufFile::open(
          std::string(HETC_SHARED_DIR) + "/vocab/ggml-vocab-phi-3.gguf", error);
  ASSERT_TRUE(file) << error;
  const hetrt::format::GgufValue *jinja = file->find("tokenizer.chat_template");
  ASSERT_TRUE(jinja && jinja->asString());
  EXPECT_EQ(detectChatTemplate(std::string(*jinja->asString())),
            ChatTemplate::Phi3);
}

} // namespace
