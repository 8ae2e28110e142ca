"""The explorer's Panel pages: thin widgets over the views' state -> result functions (panel imported lazily)."""
