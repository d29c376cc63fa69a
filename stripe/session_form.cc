#include "stripe/session_form.h"

namespace paintlock::stripe {

using base::FormFields;
using base::FormKey;

FormFields CheckoutSessionForm(const CreateSessionParams& p) {
  FormFields f;
  f.emplace_back("mode", "payment");
  for (std::size_t i = 0; i < p.line_items.size(); ++i) {
    const LineItem& item = p.line_items[i];
    const std::string index = std::to_string(i);
    f.emplace_back(FormKey("line_items", {index, "quantity"}), "1");
    f.emplace_back(FormKey("line_items", {index, "price_data", "currency"}), item.currency);
    f.emplace_back(FormKey("line_items", {index, "price_data", "unit_amount"}),
                   std::to_string(item.unit_amount_minor));
    f.emplace_back(FormKey("line_items", {index, "price_data", "product_data", "name"}), item.name);
    if (!item.description.empty()) {
      f.emplace_back(FormKey("line_items", {index, "price_data", "product_data", "description"}),
                     item.description);
    }
    if (!item.image_url.empty()) {
      f.emplace_back(FormKey("line_items", {index, "price_data", "product_data", "images", "0"}),
                     item.image_url);
    }
  }
  if (!p.success_url.empty()) f.emplace_back("success_url", p.success_url);
  if (!p.cancel_url.empty()) f.emplace_back("cancel_url", p.cancel_url);
  if (p.expires_at_unix != 0) f.emplace_back("expires_at", std::to_string(p.expires_at_unix));
  if (!p.client_reference_id.empty()) f.emplace_back("client_reference_id", p.client_reference_id);
  for (const auto& [key, value] : p.metadata) f.emplace_back(FormKey("metadata", {key}), value);
  const CheckoutCollection& c = p.collection;
  for (std::size_t i = 0; i < c.shipping_countries.size(); ++i) {
    f.emplace_back(FormKey("shipping_address_collection", {"allowed_countries", std::to_string(i)}),
                   c.shipping_countries[i]);
  }
  if (c.collect_phone) f.emplace_back(FormKey("phone_number_collection", {"enabled"}), "true");
  if (!c.locale.empty()) f.emplace_back("locale", c.locale);
  if (!c.shipping_rate.empty()) {
    f.emplace_back(FormKey("shipping_options", {"0", "shipping_rate"}), c.shipping_rate);
  }
  return f;
}

}  // namespace paintlock::stripe
