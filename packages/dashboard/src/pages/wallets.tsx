// PLACEHOLDER: replaced by the screen's implementation.
export function WalletsPage() {
  return <p>WalletsPage</p>;
}
