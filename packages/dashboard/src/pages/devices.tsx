// PLACEHOLDER: replaced by the screen's implementation.
export function DevicesPage() {
  return <p>DevicesPage</p>;
}
