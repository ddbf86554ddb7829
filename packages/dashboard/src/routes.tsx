/**
 * The dashboard's screens: path, navigation label, and the admin operation whose roles decide
 * whether the signed-in user sees the screen at all (`can(requires)`, from the document's
 * `x-roles`). Each page lives in `pages/<name>.tsx`.
 */
import type { ComponentType } from 'react';
import { ApiKeysPage } from './pages/api-keys';
import { AuditPage } from './pages/audit';
import { DevicesPage } from './pages/devices';
import { MasterKeysPage } from './pages/master-keys';
import { PoliciesPage } from './pages/policies';
import { SettingsPage } from './pages/settings';
import { SignersPage } from './pages/signers';
import { TransferDetailPage } from './pages/transfer-detail';
import { TransfersPage } from './pages/transfers';
import { UsersPage } from './pages/users';
import { WalletDetailPage } from './pages/wallet-detail';
import { WalletsPage } from './pages/wallets';
import { WebhooksPage } from './pages/webhooks';

export interface Screen {
  /** Route path (react-router syntax). */
  readonly path: string;
  readonly component: ComponentType;
  /** Navigation label; screens without one (detail pages) are reached by links. */
  readonly nav?: string;
  /** The operationId whose roles may open the screen. */
  readonly requires: string;
}

/** Every screen behind the login, in navigation order. */
export const SCREENS: readonly Screen[] = [
  { path: '/wallets', component: WalletsPage, nav: 'Wallets', requires: 'adminListWallets' },
  { path: '/wallets/:walletId', component: WalletDetailPage, requires: 'adminGetWallet' },
  { path: '/transfers', component: TransfersPage, nav: 'Transfers', requires: 'adminListTransfers' },
  { path: '/transfers/:transferId', component: TransferDetailPage, requires: 'adminGetTransfer' },
  { path: '/policies', component: PoliciesPage, nav: 'Policies', requires: 'adminListPolicies' },
  { path: '/devices', component: DevicesPage, nav: 'Devices', requires: 'adminListDevices' },
  { path: '/signers', component: SignersPage, nav: 'Servers', requires: 'adminListSigners' },
  { path: '/master-keys', component: MasterKeysPage, nav: 'Master key', requires: 'adminListMasterKeys' },
  { path: '/users', component: UsersPage, nav: 'Users', requires: 'adminListUsers' },
  { path: '/api-keys', component: ApiKeysPage, nav: 'API keys', requires: 'adminListApiKeys' },
  { path: '/webhooks', component: WebhooksPage, nav: 'Webhooks', requires: 'adminListWebhooks' },
  { path: '/audit', component: AuditPage, nav: 'Audit log', requires: 'adminListAuditLog' },
  { path: '/settings', component: SettingsPage, nav: 'Settings', requires: 'adminGetMe' },
];
