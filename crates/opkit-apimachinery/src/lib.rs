//! opkit-apimachinery
