// PLACEHOLDER: replaced by the screen's implementation.
export function WebhooksPage() {
  return <p>WebhooksPage</p>;
}
