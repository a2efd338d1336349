"""Users, sign-in, tenancy (organizations, groups, memberships) and who may do what."""
