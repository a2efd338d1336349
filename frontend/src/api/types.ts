// Named aliases for the generated component schemas; never edit shapes here.
import type { components, operations } from './schema';

type Schemas = components['schemas'];

export type UserOut = Schemas['UserOut'];
export type RoleGrantOut = Schemas['RoleGrantOut'];
export type MembershipOut = Schemas['MembershipOut'];
export type MeOut = Schemas['MeOut'];
export type LoginRequest = Schemas['LoginRequest'];
export type PasswordChangeRequest = Schemas['PasswordChangeRequest'];
export type PasswordCheckOut = Schemas['PasswordCheckOut'];
export type OrgOut = Schemas['OrgOut'];
export type GroupOut = Schemas['GroupOut'];
export type UserCreate = Schemas['UserCreate'];
export type UserUpdate = Schemas['UserUpdate'];
export type MembershipPut = Schemas['MembershipPut'];
export type AdminGrantOut = Schemas['AdminGrantOut'];
export type AuditEntryOut = Schemas['AuditEntryOut'];
export type ErrorBody = Schemas['ErrorBody'];
export type NotificationOut = Schemas['NotificationOut'];
export type WalletOut = Schemas['WalletOut'];
export type MonthlyGrantOut = Schemas['MonthlyGrantOut'];
export type RefillOut = Schemas['RefillOut'];
export type EntryOut = Schemas['EntryOut'];
export type ConsumptionOut = Schemas['ConsumptionOut'];
export type ConsumptionDayOut = Schemas['ConsumptionDayOut'];
export type MintRequest = Schemas['MintRequest'];
export type TransferRequest = Schemas['TransferRequest'];
export type TransferOut = Schemas['TransferOut'];
export type MonthlyGrantPut = Schemas['MonthlyGrantPut'];
export type WalletTreeOut = Schemas['WalletTreeOut'];
export type GroupWalletsOut = Schemas['GroupWalletsOut'];
export type InvariantReportOut = Schemas['InvariantReportOut'];
export type ClusterOut = Schemas['ClusterOut'];
export type ClusterRegister = Schemas['ClusterRegister'];
export type CardOut = Schemas['CardOut'];

export type MembershipRole = MembershipPut['role'];
export type AuditOutcome = AuditEntryOut['outcome'];
export type EntryKind = EntryOut['kind'];
export type WalletOwnerKind = WalletOut['owner_kind'];
export type ClusterStatus = ClusterOut['status'];

export type CardPage = Schemas['CardPage'];
export type OccupantOut = Schemas['OccupantOut'];
export type MigInstanceOut = Schemas['MigInstanceOut'];
export type MigChoicesOut = Schemas['MigChoicesOut'];
export type MigInstanceIn = Schemas['MigInstanceIn'];
export type GpuModelOut = Schemas['GpuModelOut'];
export type GpuModelIn = Schemas['GpuModelIn'];
export type TierOut = Schemas['TierOut'];
export type UsableTierOut = Schemas['UsableTierOut'];
export type TierIn = Schemas['TierIn'];
export type PolicyOut = Schemas['PolicyOut'];
export type EffectivePolicyOut = Schemas['EffectivePolicyOut'];
export type EffectiveValueOut = Schemas['EffectiveValueOut'];
export type QueueItemOut = Schemas['QueueItemOut'];
export type StartOut = Schemas['StartOut'];
export type HeldForBookingOut = Schemas['HeldForBookingOut'];
export type GroupShareOut = Schemas['GroupShareOut'];
export type GroupStandingOut = Schemas['GroupStandingOut'];
export type PriorityOut = Schemas['PriorityOut'];
export type UsageReportOut = Schemas['UsageReportOut'];
export type UsageRowOut = Schemas['UsageRowOut'];
export type UsageFiguresOut = Schemas['UsageFiguresOut'];
export type UsagePeriodOut = Schemas['UsagePeriodOut'];
export type IdleSessionsOut = Schemas['IdleSessionsOut'];
export type IdleSessionOut = Schemas['IdleSessionOut'];
export type SizingOut = Schemas['SizingOut'];
export type WalletAlertOut = Schemas['WalletAlertOut'];
export type WalletAlertRequest = Schemas['WalletAlertRequest'];

export type CardPool = CardOut['pool'];
export type TierKind = TierOut['kind'];
export type PolicyScope = PolicyOut['scope'];
export type QueueStatus = QueueItemOut['status'];

/** What `/api/v1/usage` (and its CSV) take: the period, the grouping, the series and the filters. */
export type UsageQuery = NonNullable<operations['get_usage']['parameters']['query']>;
export type UsageGrouping = NonNullable<UsageQuery['by']>;
export type UsageEvery = NonNullable<UsageQuery['every']>;

export type NodeOut = Schemas['NodeOut'];
export type DedicationOut = Schemas['DedicationOut'];
export type DedicationCreate = Schemas['DedicationCreate'];
export type ClusterIsolationPut = Schemas['ClusterIsolationPut'];
export type OrgIsolationOut = Schemas['OrgIsolationOut'];
export type PlacedOut = Schemas['PlacedOut'];
export type IncidentOut = Schemas['IncidentOut'];
