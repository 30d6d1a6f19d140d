class GroupCoordinator: pass
