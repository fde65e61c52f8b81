#include "base/json_writer.h"

#include <gtest/gtest.h>

#include <string>

namespace weir {
namespace {

// RFC 8259 7: quote, backslash and every control character are escaped; other bytes (UTF-8) pass as is.
TEST(json_writer, quoted_escapes_quotes_backslashes_and_control_characters) {
  EXPECT_EQ(json_writer::quoted(""), R"("")");
  EXPECT_EQ(json_writer::quoted(R"(a"b\c)"), R"("a\"b\\c")");
  EXPECT_EQ(json_writer::quoted("\n\r\t\b\f"), R"("\n\r\t\b\f")");
  EXPECT_EQ(json_writer::quoted(std::string("\x01\x1f", 2)), R"("\u0001\u001f")");
  EXPECT_EQ(json_writer::quoted(std::string(1, '\0')), R"("\u0000")");
  EXPECT_EQ(json_writer::quoted("caf\xc3\xa9 \x7f"), "\"caf\xc3\xa9 \x7f\"");
}

TEST(json_writer, append_quoted_appends_to_what_is_there) {
  std::string out = "x=";
  json_writer::append_quoted(out, "a\"");
  EXPECT_EQ(out, R"(x="a\"")");
}

TEST(json_writer, nested_containers_get_commas_between_items_only) {
  json_writer w;
  w.begin_object().key("a").value(std::int64_t{-3}).key("b").begin_array();
  w.value(true).value(false).null().begin_object().end_object().begin_array().end_array();
  w.end_array().key("c").value("s\n").key("d").raw(R"({"x":1})").end_object();
  EXPECT_EQ(w.str(), R"({"a":-3,"b":[true,false,null,{},[]],"c":"s\n","d":{"x":1}})");
  EXPECT_EQ(w.take(), R"({"a":-3,"b":[true,false,null,{},[]],"c":"s\n","d":{"x":1}})");
}

TEST(json_writer, top_level_scalar) {
  json_writer w;
  w.value("only");
  EXPECT_EQ(w.str(), R"("only")");
}

}  // namespace
}  // namespace weir
