#include "gateway/request_parsing.h"

#include <nlohmann/json.hpp>
#include <set>

#include "base/form.h"
#include "locks/lines.h"
#include "locks/painting_id.h"

namespace paintlock::gateway {

std::optional<std::vector<std::pair<std::string, std::string>>> ParseForm(const std::string& body) {
  base::FormFields fields;
  if (!base::DecodeForm(body, &fields)) return std::nullopt;
  return fields;
}

std::string PrintableExcerpt(const std::string& text, std::size_t max_bytes) {
  std::string out = text.substr(0, max_bytes);
  for (char& c : out) {
    if (c < 0x20 || c > 0x7e) c = '?';
  }
  return out;
}

namespace {

// A line token, if present, must look like one: anything else is refused
// before the database is asked.
bool ValidLineToken(const std::string& token, std::string* error, std::string* param) {
  *param = "line_token";
  if (locks::LooksLikeLineToken(token)) return true;
  *error = "\"line_token\" must be the token POST /v1/paintings/{id}/line returned (plt_…).";
  return false;
}

}  // namespace

bool ValidateCart(const std::vector<std::string>& paintings, std::string* error) {
  if (paintings.empty()) {
    *error = "The cart is empty: name at least one painting.";
    return false;
  }
  if (paintings.size() > kMaxCartItems) {
    *error = "A cart holds at most " + std::to_string(kMaxCartItems) + " paintings.";
    return false;
  }
  std::set<std::string> seen;
  for (const auto& id : paintings) {
    if (!locks::IsPaintingId(id)) {
      *error = "\"" + PrintableExcerpt(id, 80) +
               "\" is not a painting id (1-64 letters, digits, '_', '.', '-').";
      return false;
    }
    if (!seen.insert(id).second) {
      *error = "Painting \"" + id + "\" is in the cart twice; each painting exists once.";
      return false;
    }
  }
  return true;
}

namespace {

// A JSON cart read with nlohmann's SAX interface: the fields are kept as they
// stream past, and no document is built (as a document, a reserve's body was
// an eighth of the gateway's allocations a reserve). It keeps what the
// document would have said: the last of a repeated key wins, other keys and
// anything nested below a field are passed over, and a syntax error anywhere
// makes the whole body invalid.
class CartReader : public nlohmann::json_sax<nlohmann::json> {
 public:
  // A top-level field's value: absent, null, a string (kept) or anything else.
  struct Field {
    enum Kind { kAbsent, kNull, kString, kOther } kind = kAbsent;
    std::string text;
    bool given() const { return kind != kAbsent && kind != kNull; }  // null is as absent
    bool is_string() const { return kind == kString; }
  };

  bool object = false;           // the body is an object
  bool paintings_array = false;  // "paintings" is present and an array
  std::size_t painting_count = 0;
  bool painting_not_string = false;
  std::vector<std::string> paintings;  // its strings, at most kMaxCartItems + 1
  Field buyer, line_token;

  bool null() override { return Scalar(Field::kNull); }
  bool boolean(bool) override { return Scalar(Field::kOther); }
  bool number_integer(number_integer_t) override { return Scalar(Field::kOther); }
  bool number_unsigned(number_unsigned_t) override { return Scalar(Field::kOther); }
  bool number_float(number_float_t, const string_t&) override { return Scalar(Field::kOther); }
  bool string(string_t& value) override { return Scalar(Field::kString, &value); }
  bool binary(binary_t&) override { return Scalar(Field::kOther); }  // not in JSON text

  bool start_object(std::size_t) override {
    if (depth_ == 0) object = true;
    return Open(/*array=*/false);
  }
  bool end_object() override { return Close(); }
  bool start_array(std::size_t) override { return Open(/*array=*/true); }
  bool end_array() override { return Close(); }

  bool key(string_t& name) override {
    if (depth_ == 1) {
      slot_ = name == "paintings"    ? Slot::kPaintings
              : name == "buyer"      ? Slot::kBuyer
              : name == "line_token" ? Slot::kLineToken
                                     : Slot::kOther;
    }
    return true;
  }

  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  enum class Slot { kOther, kPaintings, kBuyer, kLineToken };

  // A value begins: at depth 1 it is a top-level field's, at depth 2 inside
  // "paintings" it is an element.
  void Value(Field::Kind kind, std::string* text, bool array) {
    if (depth_ == 2 && in_paintings_) {
      ++painting_count;
      if (kind != Field::kString) {
        painting_not_string = true;
      } else if (paintings.size() <= kMaxCartItems) {
        paintings.push_back(std::move(*text));
      }
      return;
    }
    if (depth_ != 1) return;
    switch (slot_) {
      case Slot::kPaintings:
        paintings_array = array;
        in_paintings_ = paintings_array;
        painting_count = 0;
        painting_not_string = false;
        paintings.clear();
        break;
      case Slot::kBuyer:
        buyer = FieldOf(kind, text);
        break;
      case Slot::kLineToken:
        line_token = FieldOf(kind, text);
        break;
      case Slot::kOther:
        break;
    }
  }

  static Field FieldOf(Field::Kind kind, std::string* text) {
    return {kind, kind == Field::kString ? std::move(*text) : std::string()};
  }

  bool Scalar(Field::Kind kind, std::string* text = nullptr) {
    Value(kind, text, /*array=*/false);
    return true;
  }

  bool Open(bool array) {
    Value(Field::kOther, nullptr, array);
    ++depth_;
    return true;
  }

  bool Close() {
    --depth_;
    if (depth_ == 1) in_paintings_ = false;
    return true;
  }

  int depth_ = 0;
  Slot slot_ = Slot::kOther;
  bool in_paintings_ = false;
};

}  // namespace

std::optional<CartRequest> ParseCartJson(const std::string& body, bool allow_buyer,
                                         std::string* error, std::string* param) {
  CartReader r;
  if (!nlohmann::json::sax_parse(body, &r)) {
    *error = "The body is not valid JSON.";
    return std::nullopt;
  }
  if (!r.object) {
    *error = "The body must be a JSON object such as {\"paintings\": [\"p1\"]}.";
    return std::nullopt;
  }
  *param = "paintings";
  if (!r.paintings_array) {
    *error = "\"paintings\" must be a list of painting ids.";
    return std::nullopt;
  }
  if (r.painting_count > kMaxCartItems) {
    *error = "A cart holds at most " + std::to_string(kMaxCartItems) + " paintings.";
    return std::nullopt;
  }
  if (r.painting_not_string) {
    *error = "\"paintings\" must contain only painting ids (strings).";
    return std::nullopt;
  }
  CartRequest cart;
  cart.paintings = std::move(r.paintings);
  if (r.buyer.given()) {
    *param = "buyer";
    if (!allow_buyer || !r.buyer.is_string() || r.buyer.text.size() > 200) {
      *error = allow_buyer ? "\"buyer\" must be a string of at most 200 characters."
                           : "\"buyer\" is not accepted here.";
      return std::nullopt;
    }
    cart.buyer_ref = std::move(r.buyer.text);
  }
  if (r.line_token.given()) {
    if (!r.line_token.is_string()) {
      *param = "line_token";
      *error = "\"line_token\" must be a string.";
      return std::nullopt;
    }
    if (!ValidLineToken(r.line_token.text, error, param)) return std::nullopt;
    cart.line_token = std::move(r.line_token.text);
  }
  *param = "paintings";
  if (!ValidateCart(cart.paintings, error)) return std::nullopt;
  param->clear();
  return cart;
}

std::optional<CartRequest> ParseCartForm(const std::string& body, std::string* error,
                                         std::string* param) {
  auto form = ParseForm(body);
  *param = "painting";
  if (!form) {
    *error = "The form body is not valid URL encoding.";
    return std::nullopt;
  }
  CartRequest cart;
  for (const auto& [key, value] : *form) {
    if (key == "painting" || key == "painting[]") {
      cart.paintings.push_back(value);
      if (cart.paintings.size() > kMaxCartItems) break;
    } else if (key == "line_token" && !value.empty()) {
      if (cart.line_token || !ValidLineToken(value, error, param)) {
        if (cart.line_token) *error = "Send at most one \"line_token\".";
        *param = "line_token";
        return std::nullopt;
      }
      cart.line_token = value;
    }
  }
  *param = "painting";
  if (!ValidateCart(cart.paintings, error)) return std::nullopt;
  param->clear();
  return cart;
}

}  // namespace paintlock::gateway
