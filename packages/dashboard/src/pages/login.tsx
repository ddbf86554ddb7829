// PLACEHOLDER: replaced by the screen's implementation.
export function LoginPage() {
  return <p>LoginPage</p>;
}
