// PLACEHOLDER: replaced by the screen's implementation.
export function WalletDetailPage() {
  return <p>WalletDetailPage</p>;
}
