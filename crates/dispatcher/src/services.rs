//! The typed service registry contributions are constructed from.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

/// A service a factory asked for is not registered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("service `{service}` is not registered")]
pub struct MissingService {
    /// The service's type name.
    pub service: &'static str,
}

/// Services by type, usually trait objects: `registry.insert::<dyn TitleController>(arc)` and
/// `registry.get::<dyn TitleController>()`. Register every service before registering the
/// contributions that need it: a missing one is a registration error naming it.
#[derive(Default)]
pub struct ServiceRegistry {
    services: HashMap<TypeId, (&'static str, Box<dyn Any + Send + Sync>)>,
}

impl fmt::Debug for ServiceRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut names: Vec<&str> = self.services.values().map(|(name, _)| *name).collect();
        names.sort_unstable();
        f.debug_struct("ServiceRegistry")
            .field("services", &names)
            .finish()
    }
}

impl ServiceRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers (or replaces) the service of type `S`.
    pub fn insert<S: ?Sized + Send + Sync + 'static>(&mut self, service: Arc<S>) -> &mut Self {
        self.services.insert(
            TypeId::of::<S>(),
            (std::any::type_name::<S>(), Box::new(service)),
        );
        self
    }

    /// The service of type `S`.
    pub fn get<S: ?Sized + Send + Sync + 'static>(&self) -> Result<Arc<S>, MissingService> {
        self.services
            .get(&TypeId::of::<S>())
            .and_then(|(_, service)| service.downcast_ref::<Arc<S>>())
            .cloned()
            .ok_or(MissingService {
                service: std::any::type_name::<S>(),
            })
    }
}
