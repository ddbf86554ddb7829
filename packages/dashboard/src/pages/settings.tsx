// PLACEHOLDER: replaced by the screen's implementation.
export function SettingsPage() {
  return <p>SettingsPage</p>;
}
