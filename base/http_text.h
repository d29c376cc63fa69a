// Small pieces of HTTP header text shared by the gateway and the fake Stripe.
// Pure functions: thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace paintlock::base {

// The media type of a Content-Type value: lowercase, without parameters or
// surrounding spaces ("Application/JSON; charset=utf-8" → "application/json").
std::string MediaTypeOf(std::string_view content_type);

// The credentials of an Authorization value "<scheme> <credentials>", the
// scheme compared case-insensitively (RFC 9110); nullopt for another scheme
// or empty credentials.
std::optional<std::string> CredentialsOf(std::string_view authorization, std::string_view scheme);

// CredentialsOf(authorization, "Bearer").
std::optional<std::string> BearerTokenOf(std::string_view authorization);

// `text` with & < > " ' as HTML entities, safe inside elements and quoted attributes.
std::string HtmlEscape(std::string_view text);

// Equality whose time depends only on the lengths, for comparing secrets.
bool ConstantTimeEquals(std::string_view a, std::string_view b);

}  // namespace paintlock::base
