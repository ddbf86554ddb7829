// PLACEHOLDER: replaced by the screen's implementation.
export function ApiKeysPage() {
  return <p>ApiKeysPage</p>;
}
