"""A real OpenID provider for the single sign-on tests: django-oauth-toolkit's, in its own process."""
