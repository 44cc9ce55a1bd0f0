// Device programs in a pack: a program survives its JSON form, and a program
// read from a pack is untrusted (unknown roles and kinds, buffer indices out
// of range, huge coefficients, zero divisors and bad RoPE tables are refused
// with the field named).
#include "runtime/format/ProgramJson.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

using namespace hetrt::format;
using hetc::abi::BufferRole;
using hetc::abi::Program;
using hetc::abi::ProgramValue;
using hetc::abi::StepKind;

namespace {

Program sampleProgram() {
  Program program;
  program.buffers = {
      {"tokens", BufferRole::Tokens, ProgramValue::tokens(4), ""},
      {"positions", BufferRole::Positions, ProgramValue::tokens(4), ""},
      {"token_embd.weight", BufferRole::Weight, ProgramValue::fixed(2048),
       "token_embd.weight"},
      {"rope.0", BufferRole::RopeTable, ProgramValue::tokens(32), ""},
      {"logits", BufferRole::Logits, ProgramValue::fixed(128), ""},
      {"logits.cpu0", BufferRole::Activation, ProgramValue::fixed(128), "", 1},
      {"blocks", BufferRole::BlockTable, ProgramValue::fixed(16), ""},
      {"kv.0", BufferRole::KvCache, ProgramValue::fixed(4096), "", 1, 4}};
  program.devices = {{"vulkan0", "spirv"}, {"cpu0", "x86"}};
  program.kvBlockSize = 64;
  hetc::abi::ProgramStep table;
  table.kind = StepKind::RopeTable;
  table.buffers = {3, 1};
  table.ropeTheta = 10000;
  table.rotaryDim = 8;
  table.headDim = 8;
  hetc::abi::ProgramStep gather;
  gather.kernel = "get_rows_f32";
  gather.buffers = {2, 0, 4};
  gather.params = {ProgramValue::fixed(16), ProgramValue{-1, 1, 0, 1},
                   ProgramValue::keys()};
  gather.grid[0] = ProgramValue{0, 64, 0, 256};
  hetc::abi::ProgramStep transfer;
  transfer.kind = StepKind::Transfer;
  transfer.device = 1;
  transfer.buffers = {4, 5};
  transfer.params = {ProgramValue::fixed(128)};
  hetc::abi::ProgramStep wait;
  wait.kind = StepKind::Wait;
  wait.device = 1;
  wait.transfer = 2;
  program.steps = {table, gather, transfer, wait};
  return program;
}

std::string mutated(void (*change)(nlohmann::json &)) {
  nlohmann::json document = nlohmann::json::parse(programToJson(sampleProgram()));
  change(document);
  return document.dump();
}

} // namespace

TEST(ProgramJson, RoundTrips) {
  std::string error;
  std::optional<Program> read =
      programFromJson(programToJson(sampleProgram()), "p.json", error);
  ASSERT_TRUE(read) << error;
  EXPECT_EQ(programToJson(*read), programToJson(sampleProgram()));
  EXPECT_EQ(read->steps[1].grid[0].at(5, 0), 2); // ceil(320 / 256)
  EXPECT_EQ(read->steps[1].params[1].at(5, 9), 4);
  EXPECT_EQ(read->buffers[2].weight, "token_embd.weight");
  EXPECT_EQ(read->devices[1].name, "cpu0");
  EXPECT_EQ(read->buffers[5].device, 1);
  EXPECT_EQ(read->steps[2].kind, StepKind::Transfer);
  EXPECT_EQ(read->steps[2].params[0].at(1, 1), 128);
  EXPECT_EQ(read->steps[3].kind, StepKind::Wait);
  EXPECT_EQ(read->steps[3].transfer, 2);
  EXPECT_EQ(read->kvBlockSize, 64);
  EXPECT_EQ(read->buffers[6].role, BufferRole::BlockTable);
  EXPECT_EQ(read->buffers[7].runs, 4);
}

TEST(ProgramJson, UntrustedProgramsAreRefusedNamingTheField) {
  struct Case {
    void (*change)(nlohmann::json &);
    const char *message;
  } cases[] = {
      {[](nlohmann::json &p) { p["schema"] = "hetc.program/0"; },
       "field \"schema\" is not \"hetc.program/5\""},
      {[](nlohmann::json &p) { p["kv_block_size"] = -64; },
       "field \"kv_block_size\" is not a block size of 0 to 65536 slots"},
      {[](nlohmann::json &p) { p.erase("kv_block_size"); },
       "field \"kv_block_size\" is not a block size"},
      {[](nlohmann::json &p) { p["kv_block_size"] = 0; },
       "field \"buffers[6].role\" is a block table, but \"kv_block_size\" "
       "is 0"},
      {[](nlohmann::json &p) { p["buffers"][0]["role"] = "scratch"; },
       "field \"buffers[0].role\" is \"scratch\", not a role"},
      {[](nlohmann::json &p) { p["buffers"][2].erase("weight"); },
       "field \"buffers[2].weight\" is missing"},
      {[](nlohmann::json &p) { p["buffers"][4]["bytes"][0] = 1ll << 50; },
       "field \"buffers[4].bytes\" holds a value that is not a whole number within"},
      {[](nlohmann::json &p) {
         p["buffers"][4]["bytes"][0] = 18446744073709551615ull;
       },
       "field \"buffers[4].bytes\" holds a value that is not a whole number within"},
      {[](nlohmann::json &p) { p["steps"][1]["grid"][0][3] = 0; },
       "field \"steps[1].grid[0]\" has a divisor below 1"},
      {[](nlohmann::json &p) { p["buffers"][7]["runs"] = 0; },
       "field \"buffers[7].runs\" is not 1 to 65536 runs of a block"},
      {[](nlohmann::json &p) { p["steps"][1]["buffers"][0] = 8; },
       "field \"steps[1].buffers\" names a buffer that does not exist"},
      {[](nlohmann::json &p) { p["steps"][1]["kind"] = "move"; },
       "field \"steps[1].kind\" is \"move\", not dispatch, transfer, wait or "
       "rope-table"},
      // Transfers between devices are waited for, by a wait on their
      // target's device, before their target is read and by the end.
      {[](nlohmann::json &p) { p["steps"].erase(3); },
       "field \"steps\" the transfer of step 2 is never waited for"},
      {[](nlohmann::json &p) { p["steps"][3]["transfer"] = 1; },
       "field \"steps\" step 3 waits for step 1, which is no earlier "
       "transfer from another device into its device"},
      {[](nlohmann::json &p) { p["steps"][3]["device"] = 0; },
       "field \"steps\" step 3 waits for step 2, which is no earlier "
       "transfer"},
      {[](nlohmann::json &p) { p["steps"][3]["transfer"] = 3; },
       "field \"steps[3]\" is not a wait, without buffers, for an earlier "
       "step"},
      {[](nlohmann::json &p) {
         nlohmann::json early = p["steps"][1];
         early["device"] = 1;
         early["buffers"] = {5};
         p["steps"].insert(p["steps"].begin() + 3, early);
       },
       "field \"steps\" step 3 touches buffer \"logits.cpu0\" before a wait "
       "for the transfer into it (step 2)"},
      {[](nlohmann::json &p) {
         p["steps"][1]["kind"] = "transfer";
         p["steps"][1]["bytes"] = {4, 0, 0, 1};
       },
       "field \"steps[1]\" is not a transfer from one buffer to another on "
       "the step's device"},
      {[](nlohmann::json &p) { p["steps"][2]["device"] = 0; },
       "field \"steps[2]\" is not a transfer from one buffer to another"},
      {[](nlohmann::json &p) { p["buffers"][1]["device"] = 2; },
       "field \"buffers[1].device\" names a device that is not in"},
      {[](nlohmann::json &p) { p["devices"][1]["target"] = "cuda"; },
       "field \"devices[1].target\" is \"cuda\", not x86 or spirv"},
      {[](nlohmann::json &p) { p["devices"][1]["name"] = "vulkan0"; },
       "field \"devices[1].name\" names a device listed before"},
      {[](nlohmann::json &p) { p["devices"][0]["name"] = ""; },
       "field \"devices[0].name\" is empty in a program of several devices"},
      {[](nlohmann::json &p) { p["steps"][0]["rotary_dim"] = 9; },
       "field \"steps[0]\" is not a RoPE table"},
      {[](nlohmann::json &p) { p["steps"][0]["theta"] = 1e300; },
       "field \"steps[0]\" is not a RoPE table"},
      {[](nlohmann::json &p) { p["steps"][1]["kernel"] = "k\x1b[2J"; },
       "field \"steps[1].kernel\" is longer than 256 bytes or holds a control "
       "character"},
      {[](nlohmann::json &p) { p["steps"] = nlohmann::json::array(); },
       "field \"steps\" is not a list of 1 to 2^20 steps"},
  };
  for (const Case &c : cases) {
    std::string error;
    EXPECT_FALSE(programFromJson(mutated(c.change), "p.json", error))
        << c.message;
    EXPECT_NE(error.find(std::string("p.json: ") + c.message),
              std::string::npos)
        << error;
  }
  std::string error;
  EXPECT_FALSE(programFromJson("{not json", "p.json", error));
  EXPECT_NE(error.find("p.json: not a JSON object"), std::string::npos);
}
