import { createContext, useContext, useMemo, type ReactNode } from 'react';
import type { MeOut } from '../api/types';
import { capabilitiesOf, type Capabilities } from './capabilities';

interface Session extends Capabilities {
  me: MeOut;
}

const SessionContext = createContext<Session | null>(null);

export function SessionProvider({ me, children }: { me: MeOut; children: ReactNode }) {
  const value = useMemo(() => ({ me, ...capabilitiesOf(me) }), [me]);
  return <SessionContext.Provider value={value}>{children}</SessionContext.Provider>;
}

/** The signed-in session and what it may do; only valid below RequireAuth. */
export function useSession(): Session {
  const session = useContext(SessionContext);
  if (!session) throw new Error('useSession must be used inside RequireAuth');
  return session;
}
