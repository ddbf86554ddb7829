// PLACEHOLDER: replaced by the screen's implementation.
export function SignersPage() {
  return <p>SignersPage</p>;
}
