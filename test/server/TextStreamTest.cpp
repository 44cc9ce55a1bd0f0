// The text a reader sees: stop strings matched across token boundaries and
// never shown, UTF-8 characters never cut.
#include "server/TextStream.h"

#include <gtest/gtest.h>

namespace hetc::server {
namespace {

std::string feed(TextStream &stream, const std::vector<std::string> &pieces) {
  std::string shown;
  for (const std::string &piece : pieces)
    shown += stream.push(piece);
  return shown;
}

TEST(TextStream, WithoutStopsShowsEachPieceAtOnce) {
  TextStream stream;
  EXPECT_EQ(stream.push(" Once"), " Once");
  EXPECT_EQ(stream.push(" upon"), " upon");
  EXPECT_EQ(stream.finish(), "");
  EXPECT_EQ(stream.shown(), " Once upon");
  EXPECT_FALSE(stream.stopped());
}

TEST(TextStream, AStopSplitAcrossTokensEndsTheTextBeforeIt) {
  TextStream stream({"named Lily"});
  std::string shown = feed(stream, {" a", " girl", " na", "med", " Li", "ly", " who"});
  EXPECT_TRUE(stream.stopped());
  EXPECT_EQ(shown, " a girl ");
  EXPECT_EQ(stream.shown(), " a girl ");
  // Pieces after the stop are ignored.
  EXPECT_EQ(stream.push(" more"), "");
}

TEST(TextStream, TextThatOnlyLooksLikeAStopIsShownOnceItDiverges) {
  TextStream stream({"</end>"});
  EXPECT_EQ(stream.push("a </"), "a ");
  EXPECT_EQ(stream.push("en"), "");
  EXPECT_EQ(stream.push("try"), "</entry");
  EXPECT_FALSE(stream.stopped());
}

TEST(TextStream, HeldTextComesOutAtTheEnd) {
  TextStream stream({"STOP"});
  EXPECT_EQ(stream.push("go ST"), "go ");
  EXPECT_EQ(stream.finish(), "ST");
  EXPECT_EQ(stream.shown(), "go ST");
}

TEST(TextStream, TheEarliestOfSeveralStopsWins) {
  TextStream stream({"cat", "a c"});
  EXPECT_EQ(feed(stream, {"I saw a cat"}), "I saw ");
  EXPECT_TRUE(stream.stopped());
}

TEST(TextStream, AStopInsideOnePieceEndsMidPiece) {
  TextStream stream({"\n"});
  EXPECT_EQ(stream.push("line one\nline two"), "line one");
  EXPECT_TRUE(stream.stopped());
}

TEST(TextStream, AnIncompleteCharacterWaitsForItsLastBytes) {
  TextStream stream;
  // "é" is C3 A9, "€" is E2 82 AC.
  EXPECT_EQ(stream.push("caf\xC3"), "caf");
  EXPECT_EQ(stream.push("\xA9 \xE2\x82"), "\xC3\xA9 ");
  EXPECT_EQ(stream.push("\xAC"), "\xE2\x82\xAC");
}

TEST(TextStream, EmptyStopsAreIgnored) {
  TextStream stream({""});
  EXPECT_EQ(stream.push("text"), "text");
  EXPECT_FALSE(stream.stopped());
}

TEST(CompleteUtf8Prefix, CountsWholeCharactersOnly) {
  EXPECT_EQ(completeUtf8Prefix(""), 0u);
  EXPECT_EQ(completeUtf8Prefix("abc"), 3u);
  EXPECT_EQ(completeUtf8Prefix("a\xF0\x9F\x98"), 1u);
  EXPECT_EQ(completeUtf8Prefix("a\xF0\x9F\x98\x80"), 5u);
}

} // namespace
} // namespace hetc::server
