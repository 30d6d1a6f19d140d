"""Security: TLS listeners, SASL authentication and the ACL authorizer."""
